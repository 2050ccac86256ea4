package agent

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func TestNeedsWrite(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	facts := func(ready int32, at time.Time) flv1.ClusterFacts {
		return flv1.ClusterFacts{KubernetesVersion: "v1.37.2", Nodes: &flv1.NodeSummary{Total: 3, Ready: ready}, LastReportTime: &metav1.Time{Time: at}}
	}
	written := &reported{facts: facts(3, now.Add(-time.Minute)), at: now.Add(-time.Minute)}
	tests := []struct {
		name     string
		last     *reported
		st       flv1.ClusterFacts
		periodic bool
		want     bool
	}{
		{"first report", &reported{}, facts(3, now), true, true},
		{"node event: written even if unchanged", written, facts(3, now), false, true},
		{"periodic, unchanged: skipped (only the time differs)", written, facts(3, now), true, false},
		{"periodic, a node became unready", written, facts(2, now), true, true},
		{"periodic, unchanged but the last write is MaxReportAge old", &reported{facts: facts(3, now), at: now.Add(-MaxReportAge)}, facts(3, now), true, true},
		{"periodic, unchanged, just under MaxReportAge", &reported{facts: facts(3, now), at: now.Add(-MaxReportAge + time.Second)}, facts(3, now), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsWrite(tt.last, tt.st, tt.periodic, now); got != tt.want {
				t.Errorf("needsWrite = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRenewed(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	old := renewed(&coordinationv1.Lease{}, "eu-1", "old-agent", 10, now.Add(-time.Hour))
	old.ResourceVersion = "42"
	old.Labels["keep"] = "me"
	l := renewed(old, "eu-1", "new-agent", 30, now)
	if *l.Spec.HolderIdentity != "new-agent" || *l.Spec.LeaseDurationSeconds != 30 || !l.Spec.RenewTime.Time.Equal(now) {
		t.Errorf("renewed spec = %+v", l.Spec)
	}
	if l.ResourceVersion != "42" || l.Labels["keep"] != "me" || l.Labels[flv1.LabelCluster] != "eu-1" {
		t.Errorf("renewed must update the Lease as read (resourceVersion, labels): %+v", l.ObjectMeta)
	}
	if *old.Spec.HolderIdentity != "old-agent" {
		t.Error("renewed changed its input")
	}
}
