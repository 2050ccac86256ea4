package membercluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func TestSetReadyCondition(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		accepted   bool
		hb         heartbeat
		grace      time.Duration
		wantStatus metav1.ConditionStatus
		wantReason string
		wantNext   time.Duration
	}{
		{"not accepted", false, heartbeat{}, 0, metav1.ConditionUnknown, flv1.ReasonPendingAcceptance, 0},
		{"no heartbeat yet", true, heartbeat{}, 0, metav1.ConditionUnknown, flv1.ReasonWaitingForAgent, 0},
		{"fresh, default grace 5x interval", true, heartbeat{renewed: now.Add(-20 * time.Second), interval: 10 * time.Second}, 0,
			metav1.ConditionTrue, flv1.ReasonHeartbeatFresh, 31 * time.Second},
		{"exactly at grace is still fresh", true, heartbeat{renewed: now.Add(-50 * time.Second), interval: 10 * time.Second}, 0,
			metav1.ConditionTrue, flv1.ReasonHeartbeatFresh, time.Second},
		{"stale beyond default grace: re-checked every interval", true, heartbeat{renewed: now.Add(-51 * time.Second), interval: 10 * time.Second}, 0,
			metav1.ConditionFalse, flv1.ReasonUnreachable, 10 * time.Second},
		{"stale, unknown interval: re-checked every 10s", true, heartbeat{renewed: now.Add(-time.Hour)}, 0,
			metav1.ConditionFalse, flv1.ReasonUnreachable, 10 * time.Second},
		{"configured grace wins", true, heartbeat{renewed: now.Add(-51 * time.Second), interval: 10 * time.Second}, 2 * time.Minute,
			metav1.ConditionTrue, flv1.ReasonHeartbeatFresh, 70 * time.Second},
		{"unknown interval falls back to 50s", true, heartbeat{renewed: now.Add(-49 * time.Second)}, 0,
			metav1.ConditionTrue, flv1.ReasonHeartbeatFresh, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := &flv1.MemberCluster{Spec: flv1.MemberClusterSpec{Accepted: tt.accepted}}
			next := setReadyCondition(mc, tt.hb, now, tt.grace)
			c := meta.FindStatusCondition(mc.Status.Conditions, flv1.ConditionReady)
			if c == nil || c.Status != tt.wantStatus || c.Reason != tt.wantReason {
				t.Fatalf("got %+v, want %s/%s", c, tt.wantStatus, tt.wantReason)
			}
			if next != tt.wantNext {
				t.Fatalf("next check in %s, want %s", next, tt.wantNext)
			}
		})
	}
}

func TestSetJoinedCondition(t *testing.T) {
	seen := heartbeat{renewed: time.Now()}
	joined := []metav1.Condition{{Type: flv1.ConditionJoined, Status: metav1.ConditionTrue, Reason: flv1.ReasonAgentConnected}}
	tests := []struct {
		name       string
		accepted   bool
		err        error
		hb         heartbeat
		prev       []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"pending acceptance", false, nil, seen, nil, metav1.ConditionFalse, flv1.ReasonPendingAcceptance},
		{"provisioning failed", true, errTest, seen, nil, metav1.ConditionFalse, flv1.ReasonProvisionFailed},
		{"waiting for agent", true, nil, heartbeat{}, nil, metav1.ConditionFalse, flv1.ReasonWaitingForAgent},
		{"agent connected", true, nil, seen, nil, metav1.ConditionTrue, flv1.ReasonAgentConnected},
		{"stays joined when the lease vanished", true, nil, heartbeat{}, joined, metav1.ConditionTrue, flv1.ReasonAgentConnected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := &flv1.MemberCluster{Spec: flv1.MemberClusterSpec{Accepted: tt.accepted}}
			mc.Status.Conditions = tt.prev
			setJoinedCondition(mc, tt.err, tt.hb)
			c := meta.FindStatusCondition(mc.Status.Conditions, flv1.ConditionJoined)
			if c == nil || c.Status != tt.wantStatus || c.Reason != tt.wantReason {
				t.Fatalf("got %+v, want %s/%s", c, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("boom")
