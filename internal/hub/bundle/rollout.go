package bundle

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/rollout"
)

// target is what one cluster's Work should ask for.
type target struct {
	revision string
	record   *flv1.WorkRollout
	remove   bool // delete the Work (a first delivery rolled back)
}

// rolloutsOf lists the Bundle's Rollouts, oldest first.
func (r *Reconciler) rolloutsOf(ctx context.Context, b *flv1.Bundle) ([]flv1.Rollout, error) {
	list := &flv1.RolloutList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{flv1.LabelBundleName: b.Name, flv1.LabelBundleUID: string(b.UID)}); err != nil {
		return nil, err
	}
	out := list.Items
	sort.Slice(out, func(i, j int) bool { return out[i].Seq() < out[j].Seq() })
	return out, nil
}

// stableRevision is what the fleet ran before the Bundle's latest change: the last revision
// that fully rolled out. A rollback returns there. Without any Rollout yet (a strategy just
// added), it is the revision most of the Bundle's Works ask for; "" when none exists.
func stableRevision(latest *flv1.Rollout, works []flv1.Work) string {
	if latest != nil {
		if latest.Status.Phase == flv1.PhaseSucceeded {
			return latest.Spec.To
		}
		return latest.Spec.From
	}
	count := map[string]int{}
	best := ""
	for i := range works {
		rev := works[i].Spec.Revision
		count[rev]++
		if count[rev] > count[best] || (count[rev] == count[best] && rev < best) {
			best = rev
		}
	}
	return best
}

// ensureRollout returns the Rollout that moves the fleet to rev, opening it (and superseding
// the one in flight) when rev is new. It returns nil when there is nothing to roll out: no
// Rollout yet and every Work already asks for rev.
func (r *Reconciler) ensureRollout(ctx context.Context, b *flv1.Bundle, current *flv1.BundleRevision, works []flv1.Work) (*flv1.Rollout, error) {
	rev := current.Name
	all, err := r.rolloutsOf(ctx, b)
	if err != nil {
		return nil, err
	}
	var latest *flv1.Rollout
	if len(all) > 0 {
		latest = &all[len(all)-1]
	}
	if latest != nil && latest.Spec.To == rev {
		return latest, nil
	}
	from := stableRevision(latest, works)
	if from == rev {
		onRev := true
		for i := range works {
			onRev = onRev && works[i].Spec.Revision == rev
		}
		if onRev {
			return nil, nil
		}
	}
	seq := 1
	if latest != nil {
		seq = latest.Seq() + 1
	}
	ro := &flv1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", b.Name, seq), Namespace: b.Namespace,
			Labels: map[string]string{flv1.LabelBundleName: b.Name, flv1.LabelBundleNamespace: b.Namespace,
				flv1.LabelBundleUID: string(b.UID), flv1.LabelRolloutSeq: strconv.Itoa(seq)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, flv1.GroupVersion.WithKind("Bundle"))}},
		Spec: flv1.RolloutSpec{Bundle: b.Name, From: from, To: rev, Strategy: *b.Spec.Rollout.DeepCopy(),
			FromSource: r.sourceOfRevision(ctx, b.Namespace, from), ToSource: current.Spec.SourceRevision},
	}
	// A name taken means the cache has not seen our last Rollout yet: fail and retry, never
	// open two rollouts for one change.
	if err := r.Client.Create(ctx, ro); err != nil {
		return nil, fmt.Errorf("open rollout %s: %w", ro.Name, err)
	}
	r.Events.Eventf(b, nil, corev1.EventTypeNormal, "RolloutStarted", "Rollout", "rollout %s opened: %s -> %s", ro.Name, revisionText(from), rev)
	if latest != nil && !latest.Status.Phase.Done() {
		if err := r.supersede(ctx, latest, fmt.Sprintf("rollout %s moves the fleet to %s", ro.Name, rev)); err != nil {
			return nil, err
		}
	}
	return ro, r.pruneRollouts(ctx, b, append(all, *ro))
}

// sourceOfRevision is a stored revision's source revision ("" when unknown).
func (r *Reconciler) sourceOfRevision(ctx context.Context, ns, name string) string {
	if name == "" {
		return ""
	}
	rev := &flv1.BundleRevision{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rev); err != nil {
		return ""
	}
	return rev.Spec.SourceRevision
}

func revisionText(rev string) string {
	if rev == "" {
		return "(nothing)"
	}
	return rev
}

// supersede ends a rollout in flight because a newer revision arrived. Its clusters stay
// where they are; the new rollout moves each of them to the new revision in its wave, and
// its rollback returns them to the same from-revision.
func (r *Reconciler) supersede(ctx context.Context, ro *flv1.Rollout, why string) error {
	before := ro.DeepCopy()
	now := metav1.Now()
	ro.Status.Phase, ro.Status.FinishedAt = flv1.PhaseSuperseded, &now
	ro.Status.Message = "superseded: " + why
	if err := r.Client.Status().Patch(ctx, ro, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("supersede rollout %s: %w", ro.Name, err)
	}
	r.Events.Eventf(ro, nil, corev1.EventTypeNormal, string(flv1.PhaseSuperseded), "Supersede", "superseded: %s", why)
	return nil
}

// endRollouts supersedes the rollout in flight of a Bundle whose strategy was removed: its
// revision now goes to every cluster at once, and the Rollout must not look alive.
func (r *Reconciler) endRollouts(ctx context.Context, b *flv1.Bundle) error {
	all, err := r.rolloutsOf(ctx, b)
	if err != nil || len(all) == 0 {
		return err
	}
	if latest := &all[len(all)-1]; !latest.Status.Phase.Done() {
		return r.supersede(ctx, latest, "the Bundle's rollout strategy was removed: its revision goes to every cluster at once")
	}
	return nil
}

// pruneRollouts deletes finished Rollouts beyond the history limit, oldest first.
func (r *Reconciler) pruneRollouts(ctx context.Context, b *flv1.Bundle, all []flv1.Rollout) error {
	limit := 10
	if b.Spec.RolloutHistoryLimit != nil {
		limit = int(*b.Spec.RolloutHistoryLimit)
	}
	var done []*flv1.Rollout
	for i := range all[:max(len(all)-1, 0)] { // never the newest
		if all[i].Status.Phase.Done() {
			done = append(done, &all[i])
		}
	}
	for i := 0; i < len(done)-limit; i++ {
		if err := r.Client.Delete(ctx, done[i]); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// planRollout runs the planner over the placed clusters and returns, per cluster, what its
// Work should ask for. Clusters the planner does not move keep what their Work asks for.
func (r *Reconciler) planRollout(ro *flv1.Rollout, placed []*flv1.MemberCluster, existing map[string]*flv1.Work, now time.Time) (rollout.Plan, map[string]target, error) {
	snapshot := make([]rollout.Cluster, 0, len(placed))
	targets := make(map[string]target, len(placed))
	for _, mc := range placed {
		c := rollout.Cluster{Name: mc.Name, Labels: mc.Labels, Reachable: mc.IsReady()}
		if w := existing[mc.Name]; w != nil {
			w = r.asWritten(w)
			c.Work = rollout.WorkOf(w)
			targets[mc.Name] = target{revision: w.Spec.Revision, record: w.Spec.Rollout}
		}
		snapshot = append(snapshot, c)
	}
	plan, err := rollout.Compute(ro, snapshot, now)
	if err != nil {
		return plan, nil, stall(flv1.ReasonInvalidPlacement, "rollout %s: %v", ro.Name, err)
	}
	for _, w := range plan.Writes {
		targets[w.Cluster] = target{revision: w.Revision, record: w.Record, remove: w.Remove}
	}
	return plan, targets, nil
}

// asWritten overlays what this hub last wrote on a cached Work the cache has not caught up
// with, so that the planner never decides twice on one cluster (for example, moving another
// cluster because it still sees this one on the old revision).
func (r *Reconciler) asWritten(w *flv1.Work) *flv1.Work {
	v, ok := r.written.Load(w.Namespace + "/" + w.Name)
	if !ok || w.Generation >= v.(*writtenWork).generation {
		return w
	}
	out := w.DeepCopy()
	out.Spec = v.(*writtenWork).spec
	out.Spec.BreakGlass = w.Spec.BreakGlass
	return out
}

// recordRollout writes the planned status of the Rollout (optimistically locked: a stale
// cache fails the write and the step is planned again) and then its Events.
func (r *Reconciler) recordRollout(ctx context.Context, ro *flv1.Rollout, plan rollout.Plan) error {
	st := plan.Status
	st.ObservedGeneration = ro.Generation
	if !equality.Semantic.DeepEqual(st, ro.Status) {
		before := ro.DeepCopy()
		ro.Status = st
		if err := r.Client.Status().Patch(ctx, ro, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			ro.Status = before.Status // the Bundle's summary must not show what was not stored
			return fmt.Errorf("write rollout %s status: %w", ro.Name, err)
		}
	}
	for _, e := range plan.Events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.Events.Eventf(ro, nil, typ, e.Reason, "Rollout", "%s", e.Message)
	}
	return nil
}

func rolloutSummary(ro *flv1.Rollout) *flv1.BundleRolloutStatus {
	if ro == nil {
		return nil
	}
	return &flv1.BundleRolloutStatus{Name: ro.Name, Phase: ro.Status.Phase, From: ro.Spec.From, To: ro.Spec.To, Message: ro.Status.Message}
}
