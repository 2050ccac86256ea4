package agent

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// heartbeatLoop renews the Lease every interval. The Lease declares the interval, so the
// hub can judge staleness without knowing the agent's flags.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	bo := backoff{min: time.Second, max: 30 * time.Second}
	wasDown := false
	for {
		err := a.heartbeat(ctx)
		wait := a.opts.HeartbeatInterval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait = bo.next()
			a.hubError(ctx, "heartbeat", err, wait)
			wasDown = true
		default:
			bo.reset()
			if wasDown {
				a.log.Info("hub reachable again; heartbeat renewed")
				wasDown = false
				a.requestReport()
			}
		}
		if !sleep(ctx, wait) {
			return
		}
	}
}

func (a *Agent) heartbeat(ctx context.Context) error {
	secs := int32(max(1, a.opts.HeartbeatInterval.Round(time.Second)/time.Second))
	cluster := a.Cluster()
	lease := coordinationv1ac.Lease(flv1.HeartbeatLeaseName, namespace(cluster)).
		WithLabels(map[string]string{flv1.LabelCluster: cluster}).
		WithSpec(coordinationv1ac.LeaseSpec().
			WithHolderIdentity(a.opts.Identity).
			WithLeaseDurationSeconds(secs).
			WithRenewTime(metav1.NewMicroTime(time.Now())))
	_, err := a.hubCS.CoordinationV1().Leases(namespace(cluster)).Apply(ctx, lease,
		metav1.ApplyOptions{FieldManager: FieldOwner, Force: true})
	return err
}
