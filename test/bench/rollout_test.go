package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// threeWaves: eu, then us, then the remaining (ap) clusters; no soak, no approval, every
// cluster of a wave at once. What remains is the control overhead: three fan-outs of a
// third of the fleet, each waiting for the previous wave's status to come back.
func threeWaves() *flv1.RolloutStrategy {
	return &flv1.RolloutStrategy{Waves: []flv1.Wave{
		{Name: "eu", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
		{Name: "us", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}},
	}}
}

// rollout changes the Bundle and waits until its rollout to the new revision succeeded.
func (f *fleet) rollout(ctx context.Context, tb testing.TB, prefix, value string) (time.Duration, *flv1.Rollout) {
	b := &flv1.Bundle{}
	key := client.ObjectKey{Namespace: "default", Name: prefix}
	if err := f.c.Get(ctx, key, b); err != nil {
		tb.Fatal(err)
	}
	before := b.DeepCopy()
	b.Spec.Source = bundleFor(prefix, value).Spec.Source
	start := time.Now()
	if err := f.c.Patch(ctx, b, client.MergeFrom(before)); err != nil {
		tb.Fatal(err)
	}
	deadline := start.Add(10 * time.Minute)
	for {
		if err := f.c.Get(ctx, key, b); err != nil {
			tb.Fatal(err)
		}
		if r := b.Status.Rollout; b.Status.ObservedGeneration == b.Generation && r != nil && r.To == b.Status.Revision {
			ro := &flv1.Rollout{}
			if err := f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: r.Name}, ro); err != nil {
				tb.Fatal(err)
			}
			switch ro.Status.Phase {
			case flv1.PhaseSucceeded:
				return time.Since(start), ro
			case flv1.PhaseHalted, flv1.PhaseRollingBack, flv1.PhaseRolledBack:
				tb.Fatalf("rollout %s: %s: %s", ro.Name, ro.Status.Phase, ro.Status.Message)
			}
		}
		if time.Now().After(deadline) {
			ro := &flv1.Rollout{}
			_ = f.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: b.Status.Rollout.Name}, ro)
			tb.Fatalf("no successful rollout within 10 min: %+v; the rollout: %+v", b.Status.Rollout, ro.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rolloutFleets are built once per size, like fleets.
var rolloutFleets = map[int]*fleet{}

func rolloutFleetOf(tb testing.TB, n int) (*fleet, string) {
	prefix := fmt.Sprintf("ro%d", n)
	if f := rolloutFleets[n]; f != nil {
		return f, prefix
	}
	ctx := context.Background()
	f := newFleet(ctx, tb, prefix, n)
	if err := f.c.Create(ctx, bundleWith(prefix, "0", threeWaves())); err != nil {
		tb.Fatal(err)
	}
	f.rollout(ctx, tb, prefix, "warm")
	rolloutFleets[n] = f
	return f, prefix
}

func runRollout(b *testing.B, n int) {
	f, prefix := rolloutFleetOf(b, n)
	ctx := context.Background()
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		d, ro := f.rollout(ctx, b, prefix, fmt.Sprintf("%d-%d", b.N, i))
		total += d
		if ro.Status.Clusters.Updated != int32(n) || len(ro.Status.Waves) != 3 {
			b.Fatalf("rollout %s: %+v, %d waves", ro.Name, ro.Status.Clusters, len(ro.Status.Waves))
		}
	}
	b.StopTimer()
	avg := total / time.Duration(b.N)
	b.ReportMetric(float64(avg.Milliseconds()), "total-ms")
	b.Logf("3-wave rollout, no soak, over %d simulated clusters (real hub API server, in-memory agents): %s", n, avg)
}

func BenchmarkRollout100Simulated(b *testing.B)  { runRollout(b, 100) }
func BenchmarkRollout1000Simulated(b *testing.B) { runRollout(b, 1000) }

// TestRolloutSmoke keeps the rollout benchmark working in `make test`: 9 simulated clusters.
func TestRolloutSmoke(t *testing.T) {
	ctx := context.Background()
	f, prefix := rolloutFleetOf(t, 9)
	d, ro := f.rollout(ctx, t, prefix, "smoke")
	for _, w := range ro.Status.Waves {
		if w.Phase != flv1.WavePassed || w.Clusters != 3 {
			t.Errorf("wave %+v", w)
		}
	}
	t.Logf("3-wave rollout over 9 simulated clusters: %s", d)
}
