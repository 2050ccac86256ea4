package agent

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

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
	cluster := a.Cluster()
	if a.renewer == nil || a.renewer.Cluster != cluster {
		a.renewer = &LeaseRenewer{Leases: a.hubCS.CoordinationV1().Leases(namespace(cluster)), Cluster: cluster,
			Identity: a.opts.Identity, Interval: a.opts.HeartbeatInterval}
	}
	return a.renewer.Renew(ctx)
}

// LeaseRenewer renews one cluster's heartbeat Lease the way the kubelet renews its node
// Lease: an update of the Lease as last written, so a renewal is one cheap write (server-side
// apply costs the hub's API server about a third more per write, and at 10,000 agents
// heartbeats are most of its load). The Lease is read, or created, only at the first renewal
// and after a failed write. The bench's simulated agents use it too.
type LeaseRenewer struct {
	Leases   coordinationv1client.LeaseInterface
	Cluster  string
	Identity string
	// Interval is declared in the Lease: the hub judges staleness by it.
	Interval time.Duration
	last     *coordinationv1.Lease
}

// Renew writes the Lease renewed now.
func (r *LeaseRenewer) Renew(ctx context.Context) error {
	l := r.last
	if l == nil {
		got, err := r.Leases.Get(ctx, flv1.HeartbeatLeaseName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			got = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: flv1.HeartbeatLeaseName, Namespace: namespace(r.Cluster)}}
		case err != nil:
			return err
		}
		l = got
	}
	secs := int32(max(1, r.Interval.Round(time.Second)/time.Second))
	l = renewed(l, r.Cluster, r.Identity, secs, time.Now())
	var err error
	if l.ResourceVersion == "" {
		l, err = r.Leases.Create(ctx, l, metav1.CreateOptions{FieldManager: FieldOwner})
	} else {
		l, err = r.Leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: FieldOwner})
	}
	if err != nil {
		r.last = nil // someone else wrote it, or it is gone: read it again next time
		return err
	}
	r.last = l
	return nil
}

// renewed is l renewed at now by identity, declaring its interval.
func renewed(l *coordinationv1.Lease, cluster, identity string, secs int32, now time.Time) *coordinationv1.Lease {
	l = l.DeepCopy()
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[flv1.LabelCluster] = cluster
	l.Spec.HolderIdentity = &identity
	l.Spec.LeaseDurationSeconds = &secs
	t := metav1.NewMicroTime(now)
	l.Spec.RenewTime = &t
	return l
}
