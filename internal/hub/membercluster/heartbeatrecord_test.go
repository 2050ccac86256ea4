package membercluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func TestRecordHeartbeat(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ready := func(st metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: flv1.ConditionReady, Status: st, Reason: "R"}}
	}
	for _, tc := range []struct {
		name    string
		prev    *time.Time
		before  metav1.ConditionStatus
		after   metav1.ConditionStatus
		facts   bool // a new fact report is copied in this reconcile
		renewed time.Duration
		want    bool
	}{
		{name: "first heartbeat", prev: nil, before: "", after: metav1.ConditionTrue, renewed: time.Second, want: true},
		{name: "fresh, nothing else changes", prev: &t0, before: metav1.ConditionTrue, after: metav1.ConditionTrue, renewed: 5 * time.Minute},
		{name: "fresh, just under the interval", prev: &t0, before: metav1.ConditionTrue, after: metav1.ConditionTrue, renewed: HeartbeatRecordInterval - time.Second},
		{name: "the interval passed", prev: &t0, before: metav1.ConditionTrue, after: metav1.ConditionTrue, renewed: HeartbeatRecordInterval, want: true},
		{name: "Ready changed", prev: &t0, before: metav1.ConditionTrue, after: metav1.ConditionFalse, renewed: time.Minute, want: true},
		{name: "status written anyway for a fact report", prev: &t0, before: metav1.ConditionTrue, after: metav1.ConditionTrue, facts: true, renewed: time.Minute, want: true},
		{name: "no renewal yet", prev: nil, before: "", after: metav1.ConditionFalse, renewed: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := &flv1.MemberClusterStatus{Conditions: ready(tc.before)}
			if tc.prev != nil {
				before.LastHeartbeatTime = &metav1.Time{Time: *tc.prev}
			}
			mc := &flv1.MemberCluster{Status: *before.DeepCopy()}
			meta.SetStatusCondition(&mc.Status.Conditions, ready(tc.after)[0])
			if tc.facts {
				mc.Status.LastReportTime = &metav1.Time{Time: t0.Add(tc.renewed)}
			}
			var hb heartbeat
			if tc.renewed >= 0 {
				hb.renewed = t0.Add(tc.renewed)
			}
			changed := recordHeartbeat(mc, before, hb)
			got := mc.Status.LastHeartbeatTime != nil && mc.Status.LastHeartbeatTime.Time.Equal(hb.renewed) && !hb.renewed.IsZero()
			if got != tc.want {
				t.Errorf("recorded %v, want %v (lastHeartbeatTime %v)", got, tc.want, mc.Status.LastHeartbeatTime)
			}
			if want := !equality.Semantic.DeepEqual(before, &mc.Status); changed != want {
				t.Errorf("reported status changed %v, want %v", changed, want)
			}
		})
	}
}
