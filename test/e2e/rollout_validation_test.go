package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// TestInvalidRolloutStrategiesAreRejected: the hub's API server refuses a Bundle whose
// rollout strategy cannot work, at admission, with a message that says what is wrong.
func TestInvalidRolloutStrategiesAreRejected(t *testing.T) {
	ensureHubNamespace(t, "team-strategy")
	d := func(s string) *metav1.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Duration{Duration: v}
	}
	ios := func(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }
	wave := func(name string) flv1.Wave {
		return flv1.Wave{Name: name, ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": name}}}
	}
	tests := []struct {
		name     string
		strategy flv1.RolloutStrategy
		want     string // in the API server's error; "" = accepted
	}{
		{"a valid strategy is accepted", flv1.RolloutStrategy{
			Waves:            []flv1.Wave{wave("dev"), {Name: "prod", MaxConcurrent: ios("25%"), Soak: d("5m"), Approval: true}},
			ProgressDeadline: d("10m"), WaveTimeout: d("1h"), FailureBudget: ios("5%"), OnFailure: flv1.FailureRollback,
		}, ""},
		{"duplicate wave names", flv1.RolloutStrategy{Waves: []flv1.Wave{wave("dev"), wave("dev")}}, `waves[1]: Duplicate value: {"name":"dev"}`},
		{"the reserved wave name", flv1.RolloutStrategy{Waves: []flv1.Wave{wave("remaining")}}, `"remaining" is reserved`},
		{"a budget over 100%", flv1.RolloutStrategy{FailureBudget: ios("120%")}, "failureBudget is a number of at least 0 or a percentage from 0% to 100%"},
		{"a negative budget", flv1.RolloutStrategy{FailureBudget: ios("-1")}, "failureBudget is a number of at least 0"},
		{"a budget that is neither", flv1.RolloutStrategy{FailureBudget: ios("five")}, "failureBudget is a number of at least 0"},
		{"maxConcurrent 0", flv1.RolloutStrategy{Waves: []flv1.Wave{{Name: "dev", MaxConcurrent: ios("0")}}}, "maxConcurrent is a number of at least 1"},
		{"a negative soak", flv1.RolloutStrategy{Waves: []flv1.Wave{{Name: "dev", Soak: d("-5m")}}}, "soak must not be negative"},
		{"a negative progress deadline", flv1.RolloutStrategy{ProgressDeadline: d("-1m")}, "progressDeadline must be positive"},
		{"a zero wave timeout", flv1.RolloutStrategy{WaveTimeout: d("0s")}, "waveTimeout must be positive"},
		{"a soak as long as the wave timeout", flv1.RolloutStrategy{Waves: []flv1.Wave{{Name: "dev", Soak: d("1h")}}, WaveTimeout: d("1h")}, "soak must be shorter than waveTimeout"},
		{"an unknown failure policy", flv1.RolloutStrategy{OnFailure: "Retry"}, `Unsupported value: "Retry"`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "s" + string(rune('a'+i)), Namespace: "team-strategy"},
				Spec: flv1.BundleSpec{Source: flv1.BundleSource{Inline: &flv1.InlineSource{}}, Rollout: &tc.strategy}}
			err := hubC.Create(context.Background(), b)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				t.Cleanup(func() { deleteBundle(t, b.Namespace, b.Name) })
				return
			}
			if err == nil {
				t.Cleanup(func() { deleteBundle(t, b.Namespace, b.Name) })
				t.Fatalf("accepted, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// TestRolloutSpecGuards: a Rollout's bundle, from and to never change, and a rollback once
// asked for cannot be withdrawn — whoever writes it (the hub ignores a Rollout it did not
// open, so this one only exercises admission).
func TestRolloutSpecGuards(t *testing.T) {
	ctx := context.Background()
	ensureHubNamespace(t, "team-guards")
	for _, from := range []string{"web-a", ""} {
		ro := &flv1.Rollout{ObjectMeta: metav1.ObjectMeta{GenerateName: "manual-", Namespace: "team-guards"},
			Spec: flv1.RolloutSpec{Bundle: "web", From: from, To: "web-b"}}
		if err := hubC.Create(ctx, ro); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hubC.Delete(ctx, ro) })
		moved := ro.DeepCopy()
		moved.Spec.To = "web-c"
		if err := hubC.Update(ctx, moved); err == nil || !strings.Contains(err.Error(), "bundle, from and to of a Rollout never change") {
			t.Errorf("from %q: changing to: %v", from, err)
		}
		moved = ro.DeepCopy()
		moved.Spec.From = "web-x"
		if err := hubC.Update(ctx, moved); err == nil || !strings.Contains(err.Error(), "never change") {
			t.Errorf("from %q: changing from: %v", from, err)
		}
		ro.Spec.Rollback, ro.Spec.Paused = true, true
		if err := hubC.Update(ctx, ro); err != nil {
			t.Fatalf("from %q: asking for a rollback: %v", from, err)
		}
		ro.Spec.Rollback = false
		if err := hubC.Update(ctx, ro); err == nil || !strings.Contains(err.Error(), "cannot be withdrawn") {
			t.Errorf("from %q: withdrawing a rollback: %v", from, err)
		}
	}
}
