package membercluster

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// DefaultGraceMultiplier: a cluster is Unreachable when its heartbeat is older than this many
// heartbeat intervals (the interval the agent declares in its Lease).
const DefaultGraceMultiplier = 5

// heartbeat is what the hub knows of an agent's liveness.
type heartbeat struct {
	renewed  time.Time     // zero: never heartbeated
	interval time.Duration // as declared by the agent
	holder   string
}

func heartbeatFromLease(l *coordinationv1.Lease) heartbeat {
	var hb heartbeat
	if l == nil {
		return hb
	}
	if l.Spec.RenewTime != nil {
		hb.renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		hb.interval = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if l.Spec.HolderIdentity != nil {
		hb.holder = *l.Spec.HolderIdentity
	}
	return hb
}

// grace is how old a heartbeat may be before the cluster counts as unreachable: the
// configured grace, else DefaultGraceMultiplier x the declared interval.
func grace(configured time.Duration, hb heartbeat) time.Duration {
	if configured > 0 {
		return configured
	}
	if hb.interval <= 0 {
		return DefaultGraceMultiplier * 10 * time.Second
	}
	return DefaultGraceMultiplier * hb.interval
}

// setJoinedCondition: Joined is True once the cluster is accepted, provisioned and its agent
// has heartbeated at least once. It never goes back to False for a stale heartbeat: that is
// what Ready says.
func setJoinedCondition(mc *flv1.MemberCluster, provisionErr error, hb heartbeat) {
	c := metav1.Condition{Type: flv1.ConditionJoined, ObservedGeneration: mc.Generation}
	prev := meta.FindStatusCondition(mc.Status.Conditions, flv1.ConditionJoined)
	switch {
	case !mc.Spec.Accepted:
		c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonPendingAcceptance
		c.Message = "waiting for the hub to accept the cluster (spec.accepted=false)"
	case provisionErr != nil:
		c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonProvisionFailed
		c.Message = "could not create the cluster's hub namespace, identity or RBAC: " + provisionErr.Error()
	case !hb.renewed.IsZero() || (prev != nil && prev.Status == metav1.ConditionTrue):
		c.Status, c.Reason = metav1.ConditionTrue, flv1.ReasonAgentConnected
		c.Message = "the agent has connected to the hub"
	default:
		c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonWaitingForAgent
		c.Message = fmt.Sprintf("credentials issued in namespace %s; waiting for the agent's first heartbeat", flv1.ClusterNamespace(mc.Name))
	}
	meta.SetStatusCondition(&mc.Status.Conditions, c)
}

// unreachableRecheck is how often an Unreachable cluster's Lease is looked at again without
// an event: its declared interval, or 10 s.
func unreachableRecheck(hb heartbeat) time.Duration {
	if hb.interval > 0 {
		return hb.interval
	}
	return 10 * time.Second
}

// setReadyCondition sets Ready from the heartbeat's age and returns when to look again (0:
// only on an event): just after a fresh heartbeat would go stale, or, when Unreachable,
// every heartbeat interval.
func setReadyCondition(mc *flv1.MemberCluster, hb heartbeat, now time.Time, configuredGrace time.Duration) time.Duration {
	c := metav1.Condition{Type: flv1.ConditionReady, ObservedGeneration: mc.Generation}
	var next time.Duration
	g := grace(configuredGrace, hb)
	switch {
	case !mc.Spec.Accepted:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, flv1.ReasonPendingAcceptance, "not accepted"
	case hb.renewed.IsZero():
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, flv1.ReasonWaitingForAgent, "no heartbeat from the agent yet"
	default:
		age := now.Sub(hb.renewed)
		if age <= g {
			c.Status, c.Reason = metav1.ConditionTrue, flv1.ReasonHeartbeatFresh
			c.Message = "agent heartbeat is fresh"
			next = g - age + time.Second // re-check just after it would go stale
		} else {
			c.Status, c.Reason = metav1.ConditionFalse, flv1.ReasonUnreachable
			c.Message = fmt.Sprintf("no heartbeat from the agent since %s (grace %s)", hb.renewed.UTC().Format(time.RFC3339), g)
			// Renewals on time are filtered out before they reach the queue (leaseEvents):
			// should the cache have shown this one late, look again every interval.
			next = unreachableRecheck(hb)
		}
	}
	meta.SetStatusCondition(&mc.Status.Conditions, c)
	return next
}
