package bundle

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func work(cluster, rev, applied string, gen int64, conds ...metav1.Condition) flv1.Work {
	w := flv1.Work{ObjectMeta: metav1.ObjectMeta{Generation: gen, Labels: map[string]string{flv1.LabelCluster: cluster}},
		Spec: flv1.WorkSpec{Revision: rev}}
	w.Status.ObservedGeneration, w.Status.AppliedRevision = gen, applied
	for _, c := range conds {
		c.ObservedGeneration = gen
		w.Status.Conditions = append(w.Status.Conditions, c)
	}
	return w
}

func cond(t, s, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: reason, Message: msg}
}

func TestAggregateAndReady(t *testing.T) {
	ok := []metav1.Condition{cond(flv1.ConditionApplied, "True", flv1.ReasonApplySucceeded, ""), cond(flv1.ConditionAvailable, "True", flv1.ReasonAllCurrent, "")}
	for _, tc := range []struct {
		name        string
		works       []flv1.Work
		unreachable map[string]bool
		want        [6]int32 // targeted applied available failed drifted unreachable
		ready       string
		reason      string
		msg         string
	}{
		{"none", nil, nil, [6]int32{}, "False", flv1.ReasonNoClusters, "selects no cluster"},
		{"all available", []flv1.Work{work("a", "r2", "r2", 1, ok...), work("b", "r2", "r2", 1, ok...)}, nil,
			[6]int32{2, 2, 2, 0, 0, 0}, "True", flv1.ReasonAvailable, "2 of 2"},
		{"pending agent", []flv1.Work{work("a", "r2", "r2", 1, ok...), work("b", "r2", "", 1)}, nil,
			[6]int32{2, 1, 1, 0, 0, 0}, "False", flv1.ReasonProgressing, "1 of 2"},
		{"stale observation is not counted", []flv1.Work{func() flv1.Work { w := work("a", "r2", "r1", 1, ok...); w.Generation = 2; return w }()}, nil,
			[6]int32{1, 0, 0, 0, 0, 0}, "False", flv1.ReasonProgressing, "0 of 1"},
		{"apply failed", []flv1.Work{work("a", "r2", "r1", 1, cond(flv1.ConditionApplied, "False", flv1.ReasonApplyFailed, "Widget x: not served"))}, nil,
			[6]int32{1, 0, 0, 1, 0, 0}, "False", flv1.ReasonFailing, "a: Widget x: not served"},
		{"unhealthy", []flv1.Work{work("a", "r2", "r2", 1, ok[0], cond(flv1.ConditionAvailable, "False", flv1.ReasonResourcesFailed, "Deployment web: ProgressDeadlineExceeded"))}, nil,
			[6]int32{1, 1, 0, 1, 0, 0}, "False", flv1.ReasonFailing, "ProgressDeadlineExceeded"},
		{"in progress is not failed", []flv1.Work{work("a", "r2", "r2", 1, ok[0], cond(flv1.ConditionAvailable, "False", flv1.ReasonInProgress, ""))}, nil,
			[6]int32{1, 1, 0, 0, 0, 0}, "False", flv1.ReasonProgressing, ""},
		{"drifted and unreachable", []flv1.Work{work("a", "r2", "r2", 1, append(ok, cond(flv1.ConditionDrifted, "True", flv1.ReasonDriftDetected, ""))...)}, map[string]bool{"a": true},
			[6]int32{1, 1, 1, 0, 1, 1}, "True", flv1.ReasonAvailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &flv1.Bundle{Status: flv1.BundleStatus{Revision: "r2"}}
			f := aggregate(&b.Status, tc.works, tc.unreachable, MaxListedFailures)
			st := b.Status
			got := [6]int32{st.Targeted, st.Applied, st.Available, st.Failed, st.Drifted, st.Unreachable}
			if got != tc.want {
				t.Errorf("counts = %v, want %v", got, tc.want)
			}
			setReadyCondition(b, f)
			c := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionReady)
			if string(c.Status) != tc.ready || c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
				t.Errorf("Ready = %s/%s %q, want %s/%s containing %q", c.Status, c.Reason, c.Message, tc.ready, tc.reason, tc.msg)
			}
		})
	}
}
