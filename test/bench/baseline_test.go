package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// The physical limit a fan-out is measured against: the same number of Work writes of the
// same size, sent straight to the same API server by one client at the hub's concurrency,
// without any controller in between. One namespace per object, as in a fleet.
func runBaseline(b *testing.B, n int, how string) {
	ctx := context.Background()
	f, prefix := fleetOf(b, n)
	works := &flv1.WorkList{}
	if err := f.c.List(ctx, works, client.MatchingLabels{flv1.LabelBundleName: prefix}); err != nil || len(works.Items) != n {
		b.Fatalf("list works: %v (%d)", err, len(works.Items))
	}
	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		start := time.Now()
		errs := make([]error, n)
		workqueue.ParallelizeUntil(ctx, 32, n, func(j int) {
			w := works.Items[j]
			name := fmt.Sprintf("baseline-%s-%d", how, i)
			spec := w.Spec.DeepCopy()
			spec.Revision = name
			obj := &flv1.Work{ObjectMeta: metav1.ObjectMeta{Name: "baseline." + prefix, Namespace: w.Namespace, Labels: map[string]string{"bench": "baseline"}}, Spec: *spec}
			switch how {
			case "apply":
				obj.APIVersion, obj.Kind = flv1.GroupVersion.String(), "Work"
				m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
				if err != nil {
					errs[j] = err
					return
				}
				delete(m, "status")
				delete(m["metadata"].(map[string]any), "creationTimestamp")
				errs[j] = f.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: m}), client.FieldOwner("bench"), client.ForceOwnership)
			case "update":
				cur := &flv1.Work{}
				err := f.c.Get(ctx, client.ObjectKeyFromObject(obj), cur)
				if apierrors.IsNotFound(err) {
					errs[j] = f.c.Create(ctx, obj)
					return
				}
				if err != nil {
					errs[j] = err
					return
				}
				cur.Spec = obj.Spec
				errs[j] = f.c.Update(ctx, cur)
			}
		})
		total += time.Since(start)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64((total / time.Duration(b.N)).Milliseconds()), "total-ms")
	b.Logf("baseline: %d Work writes (%s) straight to the hub API server, 32 at a time: %s", n, how, total/time.Duration(b.N))
}

func BenchmarkBaselineApply1000(b *testing.B)  { runBaseline(b, 1000, "apply") }
func BenchmarkBaselineUpdate1000(b *testing.B) { runBaseline(b, 1000, "update") }
