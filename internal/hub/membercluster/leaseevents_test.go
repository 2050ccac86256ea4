package membercluster

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRenewalMatters(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, secs int32, renewed *time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs}}
		if renewed != nil {
			l.Spec.RenewTime = &metav1.MicroTime{Time: *renewed}
		}
		return l
	}
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	// Interval 30 s: the default grace is 150 s, half of it 75 s.
	tests := []struct {
		name     string
		old, new *coordinationv1.Lease
		grace    time.Duration
		want     bool
	}{
		{"renewal on time", lease("a", 30, at(0)), lease("a", 30, at(30*time.Second)), 0, false},
		{"renewal after a retried failure, still well within grace", lease("a", 30, at(0)), lease("a", 30, at(60*time.Second)), 0, false},
		{"late renewal: half the grace", lease("a", 30, at(0)), lease("a", 30, at(75*time.Second)), 0, true},
		{"back after an outage", lease("a", 30, at(0)), lease("a", 30, at(10*time.Minute)), 0, true},
		{"first renewal", lease("a", 30, nil), lease("a", 30, at(0)), 0, true},
		{"renew time removed", lease("a", 30, at(0)), lease("a", 30, nil), 0, true},
		{"new holder (agent restarted)", lease("a", 30, at(0)), lease("b", 30, at(30*time.Second)), 0, true},
		{"interval changed", lease("a", 30, at(0)), lease("a", 10, at(10*time.Second)), 0, true},
		{"configured grace: 40 s gap is late for a 60 s grace", lease("a", 30, at(0)), lease("a", 30, at(40*time.Second)), time.Minute, true},
		{"configured grace: 29 s gap is on time for a 60 s grace", lease("a", 30, at(0)), lease("a", 30, at(29*time.Second)), time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renewalMatters(tt.old, tt.new, tt.grace); got != tt.want {
				t.Errorf("renewalMatters = %v, want %v", got, tt.want)
			}
		})
	}
}
