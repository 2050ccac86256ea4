// Package bundle is the hub's delivery controller. For each Bundle it reads the source,
// places it on clusters, renders it once per distinct set of matching override rules,
// stores the result as an immutable BundleRevision (content compressed and chunked, stored
// once for the fleet) and writes one Work per placed cluster. It then sums the Works'
// status into the Bundle's. Decisions are pure functions (placement.Select, Render,
// aggregate, set*Condition); Reconcile only reads the world, calls them and writes results.
package bundle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/gitsource"
	"flotilla.dev/flotilla/internal/placement"
	"flotilla.dev/flotilla/internal/rollout"
)

// MaxListedFailures bounds the failures named in the Ready condition's message.
const MaxListedFailures = 5

// Reconciler reconciles Bundles.
type Reconciler struct {
	Client client.Client
	// APIReader reads ConfigMap sources uncached (the cache holds only their metadata).
	APIReader client.Reader
	// ContentKey derives chunk names (see chunkName).
	ContentKey []byte
	// Events records rollout transitions on Bundles and Rollouts.
	Events events.EventRecorder
	// Git reads the commits GitRepositories fetched, for Bundles with a git source.
	Git *gitsource.Cache

	stored  sync.Map // chunk names known to exist
	plans   sync.Map // bundle UID -> *cachedPlan
	charts  sync.Map // repository|chart|version -> helmEntry
	written sync.Map // Work namespace/name -> *writtenWork: what this hub last wrote, while the cache lags
}

// cachedPlan avoids re-rendering when only status changed.
type cachedPlan struct {
	key      string
	objs     []*unstructured.Unstructured
	rerender Rerender
	err      error
}

// SetupWithManager registers the controller and what it watches.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &flv1.Bundle{}, configMapIndex, indexConfigMaps); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &flv1.Bundle{}, gitRepositoryIndex, indexGitRepositories); err != nil {
		return err
	}
	toBundle := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[flv1.LabelBundleName] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[flv1.LabelBundleNamespace], Name: l[flv1.LabelBundleName]}}}
	})
	allBundles := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &flv1.BundleList{}
		if err := r.Client.List(ctx, list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i].NamespacedName = client.ObjectKeyFromObject(&list.Items[i])
		}
		return out
	})

	return ctrl.ControllerManagedBy(mgr).
		Named("bundle").
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		For(&flv1.Bundle{}, ctrl.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
			predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() }}))).
		Watches(&flv1.Work{}, toBundle).
		// People act on a Rollout through its spec; its status is this controller's own.
		Watches(&flv1.Rollout{}, toBundle, ctrl.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&flv1.MemberCluster{}, allBundles, ctrl.WithPredicates(placementRelevant())).
		Watches(&corev1.ConfigMap{}, r.bundlesByIndex(configMapIndex), ctrl.OnlyMetadata).
		Watches(&flv1.GitRepository{}, r.bundlesByIndex(gitRepositoryIndex), ctrl.WithPredicates(artifactChanged())).
		Complete(r)
}

// bundlesByIndex maps an object to the Bundles of its namespace that name it in the indexed
// field (the ConfigMaps or the GitRepository they read).
func (r *Reconciler) bundlesByIndex(index string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &flv1.BundleList{}
		if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i].NamespacedName = client.ObjectKeyFromObject(&list.Items[i])
		}
		return out
	})
}

// placementRelevant passes MemberCluster changes that can change a placement or a count:
// labels, spec (accepted, taints, owner), deletion and the Ready condition; not the facts
// the agent reports every minute.
func placementRelevant() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*flv1.MemberCluster), e.ObjectNew.(*flv1.MemberCluster)
		return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			!n.DeletionTimestamp.IsZero() || n.IsReady() != o.IsReady()
	}}
}

// artifactChanged passes GitRepository changes that can change what its Bundles render or
// say: a new commit, or a change of its Ready condition (not every fetch's timestamp).
func artifactChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*flv1.GitRepository), e.ObjectNew.(*flv1.GitRepository)
		return !equality.Semantic.DeepEqual(o.Status.Artifact, n.Status.Artifact) ||
			!equality.Semantic.DeepEqual(meta.FindStatusCondition(o.Status.Conditions, flv1.ConditionReady), meta.FindStatusCondition(n.Status.Conditions, flv1.ConditionReady))
	}}
}

// Reconcile delivers one Bundle.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	b := &flv1.Bundle{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.cleanup(ctx, b)
	}
	if !controllerutil.ContainsFinalizer(b, flv1.BundleFinalizer) {
		patch := client.MergeFrom(b.DeepCopy())
		controllerutil.AddFinalizer(b, flv1.BundleFinalizer)
		if err := r.Client.Patch(ctx, b, patch); err != nil {
			return reconcile.Result{}, err
		}
	}
	before := b.Status.DeepCopy()

	clusters := &flv1.MemberClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return reconcile.Result{}, err
	}
	works := &flv1.WorkList{}
	if err := r.Client.List(ctx, works, client.MatchingLabels{flv1.LabelBundleNamespace: b.Namespace, flv1.LabelBundleName: b.Name}); err != nil {
		return reconcile.Result{}, err
	}

	var stallErr *StallError
	var deliverErr error
	var d delivered
	if !b.Spec.Paused {
		d, deliverErr = r.deliver(ctx, b, clusters.Items, works.Items)
		works.Items = d.works
		if !errors.As(deliverErr, &stallErr) && deliverErr != nil {
			log.Error(deliverErr, "delivery failed, retrying")
		}
	}
	setStalledCondition(b, stallErr)

	unreachable := map[string]bool{}
	for i := range clusters.Items {
		if !clusters.Items[i].IsReady() {
			unreachable[clusters.Items[i].Name] = true
		}
	}
	failures := aggregate(&b.Status, works.Items, unreachable, MaxListedFailures)
	setReadyCondition(b, failures)
	b.Status.ObservedGeneration = b.Generation
	if !equality.Semantic.DeepEqual(before, &b.Status) {
		if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(&flv1.Bundle{ObjectMeta: b.ObjectMeta, Status: *before})); err != nil {
			return reconcile.Result{}, err
		}
	}
	if deliverErr != nil && stallErr == nil {
		return reconcile.Result{}, deliverErr
	}
	requeue := d.requeueAfter
	if h := b.Spec.Source.Helm; h != nil && h.Repository != "" && (requeue == 0 || requeue > HelmRecheck) {
		requeue = HelmRecheck // a version range may match a newer chart
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// delivered is what one delivery step did: the Works as they now are (for counting), and,
// when a rollout governs the Bundle, when its next time-based step is due.
type delivered struct {
	works        []flv1.Work
	requeueAfter time.Duration
}

// deliver places, renders, stores and writes Works, through the Bundle's rollout when it has
// a strategy. A StallError means nothing new was sent.
func (r *Reconciler) deliver(ctx context.Context, b *flv1.Bundle, clusters []flv1.MemberCluster, works []flv1.Work) (delivered, error) {
	sel, err := placement.Select(b.Spec.Placement, clusters)
	if err != nil {
		return delivered{works: works}, stall(flv1.ReasonInvalidPlacement, "%v", err)
	}
	b.Status.MissingClusters = sel.Missing
	b.Status.Excluded = int32(len(sel.Tainted) + len(sel.NotAccepted))
	byName := map[string]*flv1.MemberCluster{}
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	// A taint keeps new placements away; a Bundle that already runs on a cluster stays
	// (NoSchedule, as for pods) and keeps receiving its revisions.
	for _, n := range sel.Tainted {
		for i := range works {
			if works[i].Labels[flv1.LabelCluster] == n {
				sel.Selected = append(sel.Selected, n)
				b.Status.Excluded--
			}
		}
	}
	placed := make([]*flv1.MemberCluster, 0, len(sel.Selected))
	for _, n := range sel.Selected {
		placed = append(placed, byName[n])
	}

	objs, sourceRev, rerender, err := r.source(ctx, b)
	if err != nil {
		return delivered{works: works}, err
	}
	plan, err := RenderWith(objs, b.Spec.Overrides, placed, rerender)
	if err != nil {
		return delivered{works: works}, err
	}
	plan.SourceRevision = sourceRev
	b.Status.SourceRevision = sourceRev
	rev, refs, err := r.ensureRevision(ctx, b, plan)
	if err != nil {
		return delivered{works: works}, err
	}
	b.Status.Revision = rev.Name
	b.Status.Variants = int32(len(rev.Status.Variants))

	existing := map[string]*flv1.Work{}
	for i := range works {
		existing[works[i].Labels[flv1.LabelCluster]] = &works[i]
		r.forgetCaughtUp(&works[i])
	}
	// Each placed cluster's Work asks for the current revision, unless a rollout decides
	// cluster by cluster.
	targets := make(map[string]target, len(placed))
	for _, mc := range placed {
		targets[mc.Name] = target{revision: rev.Name}
	}
	var ro *flv1.Rollout
	var roPlan rollout.Plan
	if b.Spec.Rollout != nil {
		if ro, err = r.ensureRollout(ctx, b, rev, works); err != nil {
			return delivered{works: works}, err
		}
	} else if err := r.endRollouts(ctx, b); err != nil {
		return delivered{works: works}, err
	}
	if ro != nil {
		if roPlan, targets, err = r.planRollout(ro, placed, existing, time.Now()); err != nil {
			return delivered{works: works}, err
		}
	}
	type write struct {
		cluster string
		spec    flv1.WorkSpec
		remove  bool
		err     error
	}
	var writes []*write
	for _, mc := range placed {
		t, ok := targets[mc.Name]
		if !ok {
			continue // not delivered yet: a rollout's first delivery has not reached it
		}
		w := existing[mc.Name]
		if t.remove {
			if w != nil {
				writes = append(writes, &write{cluster: mc.Name, remove: true})
			}
			continue
		}
		ref, src := refs[plan.ByCluster[mc.Name]], rev.Spec.SourceRevision
		if t.revision != rev.Name {
			if ref, src, err = r.variantOf(ctx, b, t.revision, mc); err != nil {
				return delivered{works: works}, err
			}
		}
		spec := desiredWorkSpec(b, mc, t.revision, ref)
		spec.SourceRevision, spec.Rollout = src, t.record
		if w != nil && (upToDate(w, spec, workLabels(b, mc.Name)) || r.cacheLags(w, spec)) {
			continue
		}
		// err stays set for a write that never ran (the context ended first).
		writes = append(writes, &write{cluster: mc.Name, spec: spec, err: fmt.Errorf("write Work for cluster %s: not attempted, stopping", mc.Name)})
	}
	// Works are independent objects: write them concurrently, so fan-out is bounded by the
	// API server and the client's rate limit, not by one request's round trip.
	workqueue.ParallelizeUntil(ctx, WorkWriters, len(writes), func(i int) {
		if writes[i].remove {
			writes[i].err = r.deleteWork(ctx, existing[writes[i].cluster])
			return
		}
		writes[i].err = r.writeWork(ctx, b, existing[writes[i].cluster], writes[i].cluster, writes[i].spec, r.remember)
	})
	var errs []error
	removed := map[string]bool{}
	for _, wr := range writes {
		if wr.err != nil {
			errs = append(errs, wr.err)
			continue
		}
		if wr.remove {
			removed[wr.cluster] = true
		} else if w := existing[wr.cluster]; w != nil {
			w.Spec.Revision = wr.spec.Revision // count it as moved; its status follows
		} else {
			works = append(works, flv1.Work{ObjectMeta: metav1.ObjectMeta{Labels: workLabels(b, wr.cluster), Generation: 1}, Spec: wr.spec})
		}
	}
	// The rollout's status is written once its Works are: a crash in between leaves Works
	// that carry their own record, from which the next step recomputes the status.
	if ro != nil && len(errs) == 0 {
		if err := r.recordRollout(ctx, ro, roPlan); err != nil {
			errs = append(errs, err)
		}
	}
	isPlaced := map[string]bool{}
	for _, n := range sel.Selected {
		isPlaced[n] = !removed[n]
	}
	kept := works[:0]
	for i := range works {
		w := works[i]
		if isPlaced[w.Labels[flv1.LabelCluster]] {
			kept = append(kept, w)
			continue
		}
		if w.Name == "" || removed[w.Labels[flv1.LabelCluster]] {
			continue
		}
		if err := r.deleteWork(ctx, &w); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.pruneHistory(ctx, b, keptRevisions(rev.Name, ro), kept); err != nil {
		errs = append(errs, fmt.Errorf("prune revision history: %w", err))
	}
	if ro != nil {
		b.Status.Rollout = rolloutSummary(ro)
		observeRollout(b, ro)
	} else {
		b.Status.Rollout = nil
		forgetRollout(b.Namespace, b.Name)
	}
	return delivered{works: kept, requeueAfter: roPlan.RequeueAfter}, errors.Join(errs...)
}

// keptRevisions are the revisions history pruning must keep besides those Works ask for:
// the current one and the from-revision of a rollout, which a rollback returns to.
func keptRevisions(current string, ro *flv1.Rollout) []string {
	if ro == nil || ro.Spec.From == "" {
		return []string{current}
	}
	return []string{current, ro.Spec.From}
}

// deleteWork removes a cluster's Work: its agent then removes or orphans the objects as
// spec.apply.deletionPolicy says.
func (r *Reconciler) deleteWork(ctx context.Context, w *flv1.Work) error {
	r.written.Delete(w.Namespace + "/" + w.Name)
	if err := r.Client.Delete(ctx, w); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove Work from cluster %s: %w", w.Labels[flv1.LabelCluster], err)
	}
	return nil
}

// source loads and parses the Bundle's objects, reusing the last result while the inputs
// (generation, ConfigMap versions, the Git commit) are unchanged. It also returns where they
// came from ("<ref>@<commit>" for a git source).
func (r *Reconciler) source(ctx context.Context, b *flv1.Bundle) ([]*unstructured.Unstructured, string, Rerender, error) {
	key, sourceRev, err := r.sourceKey(ctx, b)
	if err != nil {
		return nil, "", nil, err
	}
	if c, ok := r.plans.Load(b.UID); ok && c.(*cachedPlan).key == key {
		return c.(*cachedPlan).objs, sourceRev, c.(*cachedPlan).rerender, c.(*cachedPlan).err
	}
	var objs []*unstructured.Unstructured
	var rerender Rerender
	switch {
	case b.Spec.Source.Git != nil:
		objs, err = r.loadGit(ctx, b)
	case b.Spec.Source.Helm != nil:
		objs, rerender, err = r.loadHelm(ctx, b)
	default:
		objs, err = LoadSource(ctx, r.APIReader, b)
	}
	var se *StallError
	if err == nil || errors.As(err, &se) {
		r.plans.Store(b.UID, &cachedPlan{key: key, objs: objs, rerender: rerender, err: err})
	}
	return objs, sourceRev, rerender, err
}

// cleanup removes a deleted Bundle's Works (each agent then removes or orphans the objects,
// as spec.apply.deletionPolicy says) and its content, then lets the Bundle go.
func (r *Reconciler) cleanup(ctx context.Context, b *flv1.Bundle) error {
	if !controllerutil.ContainsFinalizer(b, flv1.BundleFinalizer) {
		return nil
	}
	works := &flv1.WorkList{}
	if err := r.Client.List(ctx, works, client.MatchingLabels{flv1.LabelBundleNamespace: b.Namespace, flv1.LabelBundleName: b.Name}); err != nil {
		return err
	}
	for i := range works.Items {
		if err := r.Client.Delete(ctx, &works.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if err := r.Client.DeleteAllOf(ctx, &flv1.ContentChunk{}, client.InNamespace(flv1.ContentNamespace),
		client.MatchingLabels{flv1.LabelBundleUID: string(b.UID)}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.plans.Delete(b.UID)
	forgetRollout(b.Namespace, b.Name)
	patch := client.MergeFrom(b.DeepCopy())
	controllerutil.RemoveFinalizer(b, flv1.BundleFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, b, patch))
}

func toUnstructured(m map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: m}
}
