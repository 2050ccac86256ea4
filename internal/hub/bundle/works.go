package bundle

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// FieldOwner is the hub's field manager on Works. Other managers own other fields (the
// CLI owns spec.breakGlass), and server-side apply keeps them apart.
const FieldOwner = "flotilla-hub"

// desiredWorkSpec is what a cluster should run for a Bundle at a revision.
func desiredWorkSpec(b *flv1.Bundle, mc *flv1.MemberCluster, rev string, ref flv1.ContentReference) flv1.WorkSpec {
	return flv1.WorkSpec{
		Bundle:          flv1.BundleReference{Namespace: b.Namespace, Name: b.Name},
		Revision:        rev,
		Content:         ref,
		Variables:       flv1.WorkVariables{ClusterName: mc.Name, Owner: mc.Spec.Owner, Labels: mc.Labels},
		TargetNamespace: b.Spec.TargetNamespace,
		Apply:           b.Spec.Apply,
	}
}

func workLabels(b *flv1.Bundle, cluster string) map[string]string {
	return map[string]string{
		flv1.LabelCluster: cluster, flv1.LabelBundleNamespace: b.Namespace, flv1.LabelBundleName: b.Name,
		"app.kubernetes.io/managed-by": "flotilla",
	}
}

// upToDate reports whether an existing Work already carries the desired spec: most
// reconciles change nothing, and skipping them keeps the hub's writes proportional to change.
func upToDate(w *flv1.Work, spec flv1.WorkSpec, lbls map[string]string) bool {
	have := w.Spec
	have.BreakGlass = nil
	for k, v := range lbls {
		if w.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(have, spec)
}

// writeWork writes the hub's part of a cluster's Work. A Work the cache holds is updated
// from it, guarded by its resourceVersion: the cheapest write the API server offers (server-
// side apply costs it about a third more per write, measured by `flotilla bench fanout`),
// and fan-outs are write-bound. The update keeps what others own (spec.breakGlass, labels);
// when the cache was stale it conflicts, and server-side apply, which needs no
// resourceVersion, writes instead. New Works are applied.
func (r *Reconciler) writeWork(ctx context.Context, b *flv1.Bundle, cached *flv1.Work, cluster string, spec flv1.WorkSpec, written func(key string, gen int64, spec flv1.WorkSpec)) error {
	if cached == nil {
		return r.applyWork(ctx, b, cluster, spec, written)
	}
	w := cached.DeepCopy()
	breakGlass := w.Spec.BreakGlass
	w.Spec = spec
	w.Spec.BreakGlass = breakGlass
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	for k, v := range workLabels(b, cluster) {
		w.Labels[k] = v
	}
	err := r.Client.Update(ctx, w, client.FieldOwner(FieldOwner))
	if apierrors.IsConflict(err) {
		return r.applyWork(ctx, b, cluster, spec, written)
	}
	if err != nil {
		return fmt.Errorf("write Work for cluster %s: %w", cluster, err)
	}
	written(w.Namespace+"/"+w.Name, w.Generation, spec)
	return nil
}

// applyWork server-side-applies the hub's part of a Work, and passes what the API server
// returned to written.
func (r *Reconciler) applyWork(ctx context.Context, b *flv1.Bundle, cluster string, spec flv1.WorkSpec, written func(key string, gen int64, spec flv1.WorkSpec)) error {
	w := &flv1.Work{Spec: spec}
	w.APIVersion, w.Kind = flv1.GroupVersion.String(), "Work"
	w.Name, w.Namespace = flv1.WorkName(b.Namespace, b.Name), flv1.ClusterNamespace(cluster)
	w.Labels = workLabels(b, cluster)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	if err != nil {
		return err
	}
	delete(m, "status")
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	u := toUnstructured(m)
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("write Work for cluster %s: %w", cluster, err)
	}
	written(w.Namespace+"/"+w.Name, u.GetGeneration(), spec)
	return nil
}

// writtenWork is the generation and spec of a Work as this hub last wrote it.
type writtenWork struct {
	generation int64
	spec       flv1.WorkSpec
}

func (r *Reconciler) remember(key string, gen int64, spec flv1.WorkSpec) {
	r.written.Store(key, &writtenWork{generation: gen, spec: spec})
}

// forgetCaughtUp drops what this hub remembers writing to w once the cache holds that write
// or a later one: the memory serves only while the cache lags (cacheLags, asWritten), and
// kept for every Work it was the hub's largest item after the cache (about 5 KB per cluster
// with 10 Bundles, `flotilla bench idle --profile-dir`).
func (r *Reconciler) forgetCaughtUp(w *flv1.Work) {
	key := w.Namespace + "/" + w.Name
	if v, ok := r.written.Load(key); ok && w.Generation >= v.(*writtenWork).generation {
		r.written.CompareAndDelete(key, v)
	}
}

// cacheLags reports whether the cached Work is older than what this hub already wrote with
// the same desired spec. Reconciles triggered by status events often see such a stale
// cache; writing again would double the fan-out's writes for nothing. A Work changed by
// someone else after our write has a newer generation, so it is written again.
func (r *Reconciler) cacheLags(cached *flv1.Work, spec flv1.WorkSpec) bool {
	v, ok := r.written.Load(cached.Namespace + "/" + cached.Name)
	if !ok {
		return false
	}
	ww := v.(*writtenWork)
	return cached.Generation < ww.generation && equality.Semantic.DeepEqual(ww.spec, spec)
}

// WorkWriters is how many Works one reconcile writes at once.
const WorkWriters = 32

// Workers is how many Bundles the hub reconciles at once. With one, a Bundle whose change
// writes 10,000 Works (about 107 s on the benchmark's hub, `flotilla bench idle --clusters
// 10000`) held up every other Bundle's reconciles for that long: their status, their rollout's
// next wave, a halt. A Bundle is never reconciled twice at once, whatever this number.
const Workers = 4
