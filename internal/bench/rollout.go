package bench

import (
	"context"
	"fmt"
	"slices"
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

func (f *Fleet) rolloutScenario(ctx context.Context, runs int, fanout time.Duration) (Result, error) {
	const name = "rollout"
	if err := f.e.Client.Create(ctx, benchBundle(name, "0", threeWaves())); err != nil {
		return Result{}, err
	}
	if _, err := f.rollout(ctx, name, "warm"); err != nil {
		return Result{}, err
	}
	var ds []time.Duration
	for i := range runs {
		d, err := f.rollout(ctx, name, fmt.Sprint("run-", i))
		if err != nil {
			return Result{}, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	d := ds[len(ds)/2]
	r := f.result(ScenarioRollout)
	if f.N <= 100 {
		r.addTarget("3-wave rollout", d.Seconds(), "s", targetRollout100)
	} else {
		r.seconds("3-wave rollout", d)
	}
	if fanout > 0 {
		r.seconds("fan-out, same run", fanout)
		r.add("rollout / fan-out", d.Seconds()/fanout.Seconds(), "x")
	}
	return r, nil
}

// rollout changes the Bundle and waits until its rollout to the new revision succeeded on
// every cluster, in three waves.
func (f *Fleet) rollout(ctx context.Context, name, value string) (time.Duration, error) {
	start, err := f.setContent(ctx, name, value)
	if err != nil {
		return 0, err
	}
	b := &flv1.Bundle{}
	key := client.ObjectKey{Namespace: "default", Name: name}
	deadline := start.Add(30 * time.Minute)
	for {
		if err := f.e.Client.Get(ctx, key, b); err != nil {
			return 0, err
		}
		if r := b.Status.Rollout; b.Status.ObservedGeneration == b.Generation && r != nil && r.To == b.Status.Revision {
			ro := &flv1.Rollout{}
			if err := f.e.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: r.Name}, ro); err != nil {
				return 0, err
			}
			switch ro.Status.Phase {
			case flv1.PhaseSucceeded:
				if ro.Status.Clusters.Updated != int32(f.N) || len(ro.Status.Waves) != 3 {
					return 0, fmt.Errorf("rollout %s succeeded with %d of %d clusters updated in %d waves", ro.Name, ro.Status.Clusters.Updated, f.N, len(ro.Status.Waves))
				}
				return time.Since(start), nil
			case flv1.PhaseHalted, flv1.PhaseRollingBack, flv1.PhaseRolledBack:
				return 0, fmt.Errorf("rollout %s: %s: %s", ro.Name, ro.Status.Phase, ro.Status.Message)
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no successful rollout of %s within 30 min: %+v", name, b.Status.Rollout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
