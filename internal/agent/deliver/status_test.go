package deliver

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent/apply"
	"flotilla.dev/flotilla/internal/agent/drift"
)

func TestBuildStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	w := &flv1.Work{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: flv1.WorkSpec{Revision: "web-r2", Content: flv1.ContentReference{Hash: "h2"}}}
	dep := apply.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web"}
	cm := apply.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "cfg"}
	healthy := []apply.Result{{Ref: dep, Health: status.CurrentStatus}, {Ref: cm, Health: status.CurrentStatus}}
	prev := flv1.WorkStatus{AppliedRevision: "web-r1", AppliedHash: "h1"}
	bg := &flv1.BreakGlass{By: "alice", Reason: "INC-1", Until: metav1.NewTime(now.Add(time.Hour))}
	type want struct{ applied, available, drifted, reason, msg, rev string }
	for _, tc := range []struct {
		name string
		o    outcome
		want want
	}{
		{"applied and healthy", outcome{health: healthy}, want{"True", "True", "False", flv1.ReasonAllCurrent, "2 objects current", "web-r2"}},
		{"blocked keeps the applied revision", outcome{blockedReason: flv1.ReasonApplyFailed, blockedMessage: "the member does not serve Widget"},
			want{"False", "False", "", flv1.ReasonApplyFailed, "does not serve Widget", "web-r1"}},
		{"one object failed to apply", outcome{results: []apply.Result{{Ref: cm, Err: errors.New("conflict")}}, health: healthy},
			want{"False", "False", "False", flv1.ReasonApplyFailed, "", "web-r1"}},
		{"unhealthy", outcome{health: []apply.Result{{Ref: dep, Health: status.FailedStatus, Message: "Progress deadline exceeded"}}},
			want{"True", "False", "False", flv1.ReasonResourcesFailed, "Progress deadline exceeded", "web-r2"}},
		{"in progress", outcome{health: []apply.Result{{Ref: dep, Health: status.InProgressStatus, Message: "0 of 1 ready"}}},
			want{"True", "False", "False", flv1.ReasonInProgress, "0 of 1 ready", "web-r2"}},
		{"drift reported", outcome{health: healthy, mode: flv1.DriftReport, drift: map[apply.Ref][]drift.Difference{dep: {{Path: "/spec/replicas", Desired: "1", Live: "5"}}}},
			want{"True", "True", "True", flv1.ReasonDriftDetected, "1 objects differ", "web-r2"}},
		{"break-glass", outcome{health: healthy, breakGlass: bg, drift: map[apply.Ref][]drift.Difference{dep: {{Path: "/spec/replicas"}}}},
			want{"True", "True", "True", flv1.ReasonBreakGlassActive, "suspended by alice", "web-r2"}},
		{"corrected", outcome{health: healthy, corrected: 1}, want{"True", "True", "False", flv1.ReasonDriftCorrected, "restored 1", "web-r2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := buildStatus(w, prev, tc.o, now)
			get := func(typ string) *metav1.Condition { return meta.FindStatusCondition(st.Conditions, typ) }
			check := func(typ, want string) {
				c := get(typ)
				if want == "" {
					return
				}
				if c == nil || string(c.Status) != want {
					t.Errorf("%s = %v, want %s", typ, c, want)
				} else if c.ObservedGeneration != 3 {
					t.Errorf("%s observedGeneration = %d", typ, c.ObservedGeneration)
				}
			}
			check(flv1.ConditionApplied, tc.want.applied)
			check(flv1.ConditionAvailable, tc.want.available)
			check(flv1.ConditionDrifted, tc.want.drifted)
			found := false
			for _, c := range st.Conditions {
				if c.Reason == tc.want.reason && strings.Contains(c.Message, tc.want.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no condition with reason %s and message containing %q: %+v", tc.want.reason, tc.want.msg, st.Conditions)
			}
			if st.AppliedRevision != tc.want.rev {
				t.Errorf("appliedRevision = %s, want %s", st.AppliedRevision, tc.want.rev)
			}
		})
	}
}
