package rollout

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// summarize fills the counts, the failure lists and the message from the members as this
// step left them.
func (p *planner) summarize() {
	st := &p.status
	allowed, used := p.budget()
	st.FailureBudget = flv1.FailureBudgetStatus{Allowed: allowed, Used: used}
	st.Clusters = flv1.RolloutClusterCounts{Total: int32(len(p.members))}
	for i := range st.Waves {
		ws := &st.Waves[i]
		ws.Clusters, ws.Updated, ws.Healthy, ws.Failed = 0, 0, 0, 0
	}
	var failures []flv1.ClusterFailure
	for _, m := range p.members {
		ws := &st.Waves[m.wave]
		ws.Clusters++
		if !m.Reachable {
			st.Clusters.Unreachable++
		}
		if m.updated {
			ws.Updated++
			st.Clusters.Updated++
		}
		if m.healthy {
			ws.Healthy++
			st.Clusters.Healthy++
		}
		if m.failed != nil {
			ws.Failed++
			st.Clusters.Failed++
			failures = append(failures, flv1.ClusterFailure{Cluster: m.Name, Wave: m.failed.Wave, Reason: m.failed.FailureReason, At: *m.failed.FailedAt})
		}
	}
	if n := st.Clusters.Total; n > 0 {
		st.UpdatedPercent = st.Clusters.Updated * 100 / n
	} else {
		st.UpdatedPercent = 0
	}
	sort.SliceStable(failures, func(i, j int) bool { return failures[i].At.Before(&failures[j].At) })
	st.FailedClusters = failures[:min(len(failures), MaxListed)]
	st.FailuresByDimension = p.byDimension()
	st.Message = p.message()
}

// byDimension counts failures per value of each dimension label (clusters without the
// label are left out), values with failures only, most failures (then highest share) first.
func (p *planner) byDimension() []flv1.DimensionFailures {
	keys := p.ro.Spec.Strategy.DimensionLabels
	if len(keys) == 0 {
		keys = DefaultDimensionLabels
	}
	var out []flv1.DimensionFailures
	for _, k := range keys {
		total, failed := map[string]int32{}, map[string]int32{}
		for _, m := range p.members {
			v, ok := m.Labels[k]
			if !ok {
				continue // a cluster without the label says nothing about where failures concentrate
			}
			total[v]++
			if m.failed != nil {
				failed[v]++
			}
		}
		for v, f := range failed {
			out = append(out, flv1.DimensionFailures{Label: k, Value: v, Failed: f, Clusters: total[v]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Failed != b.Failed {
			return a.Failed > b.Failed
		}
		if a.Failed*b.Clusters != b.Failed*a.Clusters {
			return a.Failed*b.Clusters > b.Failed*a.Clusters
		}
		if a.Label != b.Label {
			return a.Label < b.Label
		}
		return a.Value < b.Value
	})
	return out[:min(len(out), MaxListed)]
}

// message says in one line what the rollout does or waits for, and what a person can do.
func (p *planner) message() string {
	st := &p.status
	budget := fmt.Sprintf("failure budget %d/%d used", st.FailureBudget.Used, st.FailureBudget.Allowed)
	switch st.Phase {
	case flv1.PhaseSucceeded:
		return fmt.Sprintf("%d clusters on %s; %s", st.Clusters.Updated, p.ro.Spec.To, budget)
	case flv1.PhaseSuperseded:
		return "superseded by a newer revision"
	case flv1.PhaseRolledBack, flv1.PhaseRollingBack:
		msg := fmt.Sprintf("returned to %s", revisionOrNothing(p.ro.Spec.From))
		if st.Phase == flv1.PhaseRollingBack {
			msg = fmt.Sprintf("returning to %s", revisionOrNothing(p.ro.Spec.From))
		}
		if st.HaltReason != "" {
			msg += " after " + haltText(st.HaltReason)
		}
		if st.PendingRollbackCount > 0 {
			msg += fmt.Sprintf("; %d clusters pending (%s)", st.PendingRollbackCount, list(st.PendingRollback, 5))
		}
		return msg
	case flv1.PhaseHalted:
		return fmt.Sprintf("halted: %s; %s; undo with `flotilla rollout undo %s`", haltText(st.HaltReason), budget, p.cliTarget())
	case flv1.PhasePaused:
		return fmt.Sprintf("paused; resume with `flotilla rollout resume %s`", p.cliTarget())
	}
	for _, ws := range st.Waves {
		switch ws.Phase {
		case flv1.WaveWaitingForApproval:
			return fmt.Sprintf("wave %s (%d clusters) waits for approval: `flotilla rollout approve %s --wave %s`", ws.Name, ws.Clusters, p.cliTarget(), ws.Name)
		case flv1.WaveSoaking:
			return fmt.Sprintf("wave %s soaking: %d/%d healthy; %s", ws.Name, ws.Healthy, ws.Clusters, budget)
		case flv1.WaveProgressing:
			return fmt.Sprintf("wave %s: %d/%d updated, %d healthy, %d failed; %s", ws.Name, ws.Updated, ws.Clusters, ws.Healthy, ws.Failed, budget)
		}
	}
	return budget
}

// cliTarget is how the CLI names the rollout's Bundle: "BUNDLE -n NAMESPACE".
func (p *planner) cliTarget() string {
	if p.ro.Namespace == "" {
		return p.ro.Spec.Bundle
	}
	return p.ro.Spec.Bundle + " -n " + p.ro.Namespace
}

func haltText(reason string) string {
	switch reason {
	case flv1.ReasonBudgetExhausted:
		return "the failure budget is exhausted"
	case flv1.ReasonWaveTimedOut:
		return "a wave timed out"
	case flv1.ReasonAborted:
		return "aborted"
	}
	return reason
}

func revisionOrNothing(rev string) string {
	if rev == "" {
		return "no revision (the Bundle's objects are removed)"
	}
	return rev
}

func list(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + ", ..."
}

// tellTransitions turns what changed since the last status into Events.
func (p *planner) tellTransitions(prev *flv1.RolloutStatus) {
	before := map[string]flv1.WaveStatus{}
	for _, w := range prev.Waves {
		before[w.Name] = w
	}
	for i, ws := range p.status.Waves {
		old := before[ws.Name]
		if old.StartedAt == nil && ws.StartedAt != nil && ws.FinishedAt == nil {
			msg := fmt.Sprintf("wave %s started: %d clusters", ws.Name, ws.Clusters)
			for _, a := range p.ro.Spec.Approvals {
				if a.Wave == ws.Name && p.waves[i].Approval {
					msg += fmt.Sprintf(", approved by %s", a.By)
					if a.Comment != "" {
						msg += ": " + a.Comment
					}
				}
			}
			p.events = append([]Event{{Reason: "WaveStarted", Message: msg}}, p.events...)
		}
		if old.Phase != flv1.WaveTimedOut && ws.Phase == flv1.WaveTimedOut {
			p.events = append(p.events, Event{Warning: true, Reason: "WaveTimedOut", Message: fmt.Sprintf("wave %s did not pass within %s", ws.Name, p.ro.Spec.Strategy.WaveTimeout.Duration)})
		}
	}
	if prev.Phase != p.status.Phase {
		warn := p.status.Phase == flv1.PhaseHalted || p.status.Phase == flv1.PhaseRollingBack || p.status.Phase == flv1.PhaseRolledBack
		p.events = append(p.events, Event{Warning: warn, Reason: string(p.status.Phase), Message: p.status.Message})
	}
}

// setReadyCondition: Ready is True once the rollout succeeded.
func setReadyCondition(st *flv1.RolloutStatus, now metav1.Time) {
	c := metav1.Condition{Type: flv1.ConditionRolloutReady, Status: metav1.ConditionFalse, Reason: string(st.Phase), Message: st.Message}
	if st.Phase == flv1.PhaseSucceeded {
		c.Status, c.Reason = metav1.ConditionTrue, flv1.ReasonRolloutDone
	}
	if c.Reason == "" {
		c.Reason = "Pending"
	}
	setCondition(st, c, now)
}

// setHaltedCondition: Halted is True while the rollout is halted or returning because of a
// halt, with the reason.
func setHaltedCondition(st *flv1.RolloutStatus, now metav1.Time) {
	c := metav1.Condition{Type: flv1.ConditionHalted, Status: metav1.ConditionFalse, Reason: "NotHalted"}
	switch {
	case st.Phase == flv1.PhaseHalted || (st.RollbackStartedAt != nil && st.HaltReason != ""):
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, st.HaltReason, haltText(st.HaltReason)
	case st.RollbackStartedAt != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, flv1.ReasonRollbackAsked, "rolled back on request"
	}
	setCondition(st, c, now)
}

// setCondition sets c keeping a copy of the list, so the caller's previous status stays as it was.
func setCondition(st *flv1.RolloutStatus, c metav1.Condition, now metav1.Time) {
	conds := append([]metav1.Condition(nil), st.Conditions...)
	c.LastTransitionTime = now
	meta.SetStatusCondition(&conds, c)
	st.Conditions = conds
}
