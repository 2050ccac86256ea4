package membercluster

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// HeartbeatRecordInterval is how old status.lastHeartbeatTime may grow before a fresh
// heartbeat alone rewrites it. The time is also refreshed with every status write made for
// another reason, above all the copy of the agent's fact report, which the agent writes at
// least every 10 minutes (agent.MaxReportAge): with an interval longer than that, an agent
// that reports costs no write of its own for this field. Once a minute was a third of the
// hub's writes at rest (flotilla bench idle: 1 of 3.1 writes per cluster per minute); the
// time matters when Ready changes, where it is always recorded, and the Lease itself always
// has the exact time.
const HeartbeatRecordInterval = 15 * time.Minute

// recordHeartbeat copies the Lease's renew time into status when status is written anyway
// (before differs from mc.Status: Ready changed, a fact report was copied, ...), or when the
// recorded time is older than HeartbeatRecordInterval. It reports whether status now differs
// from before, that is whether it must be written.
func recordHeartbeat(mc *flv1.MemberCluster, before *flv1.MemberClusterStatus, hb heartbeat) (changed bool) {
	changed = !equality.Semantic.DeepEqual(before, &mc.Status)
	if hb.renewed.IsZero() {
		return changed
	}
	prev := before.LastHeartbeatTime
	if prev == nil || hb.renewed.Sub(prev.Time) >= HeartbeatRecordInterval || changed {
		mc.Status.LastHeartbeatTime = &metav1.Time{Time: hb.renewed}
		return true
	}
	return false
}
