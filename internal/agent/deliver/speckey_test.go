package deliver

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// TestSpecKey: only what runs makes the agent apply again in full; the hub's rollout record
// and a break-glass record do not (a full apply would undo the hand edits break-glass allows).
func TestSpecKey(t *testing.T) {
	base := &flv1.Work{Spec: flv1.WorkSpec{Revision: "web-a", Content: flv1.ContentReference{Hash: "h1"}}}
	tests := []struct {
		name   string
		mutate func(*flv1.WorkSpec)
		same   bool
	}{
		{"a rollout record", func(s *flv1.WorkSpec) {
			s.Rollout = &flv1.WorkRollout{Name: "web-2", Wave: "dev", MovedAt: metav1.Now()}
		}, true},
		{"a break-glass record", func(s *flv1.WorkSpec) { s.BreakGlass = &flv1.BreakGlass{By: "alice", Reason: "INC-1"} }, true},
		{"a new revision", func(s *flv1.WorkSpec) { s.Revision, s.Content.Hash = "web-b", "h2" }, false},
		{"another drift mode", func(s *flv1.WorkSpec) { s.Apply.Drift = flv1.DriftReport }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := base.DeepCopy()
			tc.mutate(&w.Spec)
			if got := specKey(w) == specKey(base); got != tc.same {
				t.Errorf("same key = %v, want %v", got, tc.same)
			}
		})
	}
}
