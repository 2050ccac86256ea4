// Package rollout is the pure planner of progressive rollouts: given a Rollout (its
// strategy, the people's actions and its last status), a snapshot of the clusters it covers
// and the time, it decides which Works move now, which clusters count as failed, and the
// rollout's new status. It reads no clock and no API: the hub's bundle controller gathers
// the snapshot, calls Plan and writes what it returns, so every decision is table-tested here.
package rollout

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// Cluster is one placed cluster as the planner sees it.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Reachable: the cluster's heartbeat is fresh.
	Reachable bool
	// Work is nil when the cluster has no Work yet (it just joined the Bundle's placement).
	Work *Work
}

// Work is what the planner needs of one cluster's Work.
type Work struct {
	// Revision the Work asks for (spec.revision).
	Revision string
	// Record is spec.rollout.
	Record *flv1.WorkRollout
	// Healthy: the agent applied Revision and every object is available.
	Healthy bool
	// AppliedRevision is what the agent last applied in full.
	AppliedRevision string
	// Problem is what the agent reports when not healthy ("" if nothing yet).
	Problem string
	// UnhealthySince is when the Work last stopped being available (zero when unknown).
	UnhealthySince time.Time
}

// WorkOf reads the planner's view of a Work: healthy means the agent applied exactly the
// revision and content the Work asks for and reports every object available.
func WorkOf(w *flv1.Work) *Work {
	out := &Work{Revision: w.Spec.Revision, Record: w.Spec.Rollout, AppliedRevision: w.Status.AppliedRevision}
	avail := meta.FindStatusCondition(w.Status.Conditions, flv1.ConditionAvailable)
	applied := meta.FindStatusCondition(w.Status.Conditions, flv1.ConditionApplied)
	current := w.Status.AppliedRevision == w.Spec.Revision && w.Status.AppliedHash == w.Spec.Content.Hash
	out.Healthy = current && avail != nil && avail.Status == metav1.ConditionTrue &&
		(applied == nil || applied.Status == metav1.ConditionTrue)
	switch {
	case out.Healthy:
	case applied != nil && applied.Status == metav1.ConditionFalse:
		out.Problem = applied.Reason + ": " + applied.Message
	case !current:
		out.Problem = "not yet applied by the agent"
	case avail != nil:
		out.Problem = avail.Reason + ": " + avail.Message
	}
	if avail != nil && avail.Status != metav1.ConditionTrue {
		out.UnhealthySince = avail.LastTransitionTime.Time
	}
	return out
}

// Write is one Work to write: the revision it asks for and its rollout record. Remove means
// delete the Work (a rollback of a Bundle's first delivery returns the cluster to nothing).
type Write struct {
	Cluster  string
	Revision string
	Record   *flv1.WorkRollout
	Remove   bool
}

// Event is one transition worth telling people about.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Plan is what to do now.
type Plan struct {
	// Status is the rollout's complete new status (ObservedGeneration left to the caller).
	Status flv1.RolloutStatus
	// Writes are the Works to write, in cluster-name order.
	Writes []Write
	// Events are the transitions of this step.
	Events []Event
	// RequeueAfter is when a time-based decision is next due (0: none; events will do).
	RequeueAfter time.Duration
}
