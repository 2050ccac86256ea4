package bench

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

type way struct {
	name string
	d    time.Duration
}

// baseline is the physical limit a fan-out is measured against: the same number of Work
// updates of the same size, one per cluster namespace, sent straight to the same API server
// by one client with no controller in between. It tries server-side apply and update (from
// objects listed beforehand, as a controller's cache holds them) at two concurrencies and
// returns the best, then deletes its objects so that they do not weigh on what follows.
func (f *Fleet) baseline(ctx context.Context, bundle string) (time.Duration, []way, error) {
	works := &flv1.WorkList{}
	if err := f.e.Client.List(ctx, works, client.MatchingLabels{flv1.LabelBundleName: bundle}); err != nil {
		return 0, nil, err
	}
	if len(works.Items) != f.N {
		return 0, nil, fmt.Errorf("%d Works of %s, want %d", len(works.Items), bundle, f.N)
	}
	objs := make([]*flv1.Work, f.N)
	for i, w := range works.Items {
		spec := w.Spec.DeepCopy()
		objs[i] = &flv1.Work{TypeMeta: metav1.TypeMeta{APIVersion: flv1.GroupVersion.String(), Kind: "Work"},
			ObjectMeta: metav1.ObjectMeta{Name: "baseline", Namespace: w.Namespace, Labels: map[string]string{"bench": "baseline"}},
			Spec:       *spec}
	}
	apply := func(rev string) func(int) error {
		return func(i int) error {
			o := objs[i].DeepCopy()
			o.Spec.Revision = rev
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return err
			}
			delete(m, "status")
			delete(m["metadata"].(map[string]any), "creationTimestamp")
			return f.e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: m}),
				client.FieldOwner("bench-baseline"), client.ForceOwnership)
		}
	}
	// Created untimed: a fan-out changes existing Works.
	if _, err := timed(ctx, 64, f.N, apply("create")); err != nil {
		return 0, nil, err
	}
	cur := &flv1.WorkList{}
	if err := f.e.Client.List(ctx, cur, client.MatchingLabels{"bench": "baseline"}); err != nil {
		return 0, nil, err
	}
	var ways []way
	best := time.Duration(0)
	for _, conc := range []int{32, 128} {
		for _, how := range []string{"apply", "update"} {
			rev := fmt.Sprintf("%s-%d", how, conc)
			do := apply(rev)
			if how == "update" {
				do = func(i int) error {
					o := cur.Items[i].DeepCopy()
					o.Spec.Revision = rev
					if err := f.e.Client.Update(ctx, o); err != nil {
						return err
					}
					cur.Items[i] = *o
					return nil
				}
			}
			d, err := timed(ctx, conc, f.N, do)
			if err != nil {
				return 0, nil, fmt.Errorf("%s: %w", rev, err)
			}
			if how == "apply" { // the update after it needs fresh resourceVersions
				if err := f.e.Client.List(ctx, cur, client.MatchingLabels{"bench": "baseline"}); err != nil {
					return 0, nil, err
				}
			}
			ways = append(ways, way{fmt.Sprintf("(%s, %d at a time)", how, conc), d})
			if best == 0 || d < best {
				best = d
			}
		}
	}
	_, err := timed(ctx, 64, f.N, func(i int) error {
		return client.IgnoreNotFound(f.e.Client.Delete(ctx, &cur.Items[i]))
	})
	return best, ways, err
}

// timed runs do(0..n-1) with conc at a time and returns how long all took.
func timed(ctx context.Context, conc, n int, do func(int) error) (time.Duration, error) {
	errs := make([]error, n)
	start := time.Now()
	workqueue.ParallelizeUntil(ctx, conc, n, func(i int) { errs[i] = do(i) })
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return d, err
		}
	}
	return d, nil
}
