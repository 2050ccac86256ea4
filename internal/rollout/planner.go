package rollout

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// Defaults of a strategy's optional fields.
const (
	DefaultProgressDeadline = 10 * time.Minute
	// MaxListed bounds the failed and pending clusters and the dimensions a status lists.
	MaxListed = 50
)

// DefaultDimensionLabels group failures when the strategy names none.
var DefaultDimensionLabels = []string{"env", "region", "provider"}

// member is one cluster during planning: what it is and what this step decided.
type member struct {
	*Cluster
	wave    int
	updated bool // its Work asks for the rollout's new revision
	healthy bool
	failed  *flv1.WorkRollout // set when counted as failed in this rollout
	write   *Write
}

// planner holds one planning step.
type planner struct {
	ro       *flv1.Rollout
	now      time.Time
	mnow     metav1.Time
	waves    []flv1.Wave // the strategy's waves and the implicit "remaining"
	members  []*member
	status   flv1.RolloutStatus
	events   []Event
	wake     time.Time
	deadline time.Duration
}

// Compute plans one step of a rollout. The same input always gives the same plan.
func Compute(ro *flv1.Rollout, clusters []Cluster, now time.Time) (Plan, error) {
	p := &planner{ro: ro, now: now, mnow: metav1.NewTime(now), deadline: DefaultProgressDeadline}
	if d := ro.Spec.Strategy.ProgressDeadline; d != nil && d.Duration > 0 {
		p.deadline = d.Duration
	}
	if err := p.assignWaves(clusters); err != nil {
		return Plan{}, err
	}
	prev := ro.Status
	p.status = flv1.RolloutStatus{
		Phase: prev.Phase, StartedAt: prev.StartedAt, FinishedAt: prev.FinishedAt, PausedAt: prev.PausedAt,
		RollbackStartedAt: prev.RollbackStartedAt, HaltReason: prev.HaltReason, Conditions: prev.Conditions,
	}
	if p.status.StartedAt == nil {
		p.status.StartedAt = &p.mnow
	}
	p.status.Waves = p.waveStatuses()

	if prev.Phase != flv1.PhaseSuperseded {
		p.step()
	}
	p.summarize()
	p.tellTransitions(&prev)
	setReadyCondition(&p.status, p.mnow)
	setHaltedCondition(&p.status, p.mnow)

	plan := Plan{Status: p.status, Events: p.events}
	for _, m := range p.members {
		if m.write != nil {
			plan.Writes = append(plan.Writes, *m.write)
		}
	}
	if !p.wake.IsZero() {
		plan.RequeueAfter = max(p.wake.Sub(now), time.Second)
	}
	return plan, nil
}

// assignWaves puts every cluster in its wave: the wave recorded when this rollout moved it,
// else the first wave whose selector matches its labels now, else "remaining".
func (p *planner) assignWaves(clusters []Cluster) error {
	p.waves = append(append([]flv1.Wave{}, p.ro.Spec.Strategy.Waves...),
		flv1.Wave{Name: flv1.RemainingWave, MaxConcurrent: p.ro.Spec.Strategy.RemainingMaxConcurrent})
	sels := make([]labels.Selector, len(p.waves)-1)
	for i := range sels {
		s, err := metav1.LabelSelectorAsSelector(&p.waves[i].ClusterSelector)
		if err != nil {
			return fmt.Errorf("wave %s: clusterSelector: %w", p.waves[i].Name, err)
		}
		sels[i] = s
	}
	for i := range clusters {
		c := &clusters[i]
		m := &member{Cluster: c, wave: len(p.waves) - 1}
		if w := c.Work; w != nil && w.Record != nil && w.Record.Name == p.ro.Name {
			if w.Record.FailedAt != nil {
				m.failed = w.Record
			}
		}
		if i, ok := p.recordedWave(c); ok {
			m.wave = i
		} else {
			for i, s := range sels {
				if s.Matches(labels.Set(c.Labels)) {
					m.wave = i
					break
				}
			}
		}
		m.updated = c.Work != nil && c.Work.Revision == p.ro.Spec.To
		m.healthy = m.updated && c.Work.Healthy
		p.members = append(p.members, m)
	}
	sort.Slice(p.members, func(i, j int) bool { return p.members[i].Name < p.members[j].Name })
	return nil
}

// recordedWave is the wave this rollout moved the cluster in, while it is on the new revision.
func (p *planner) recordedWave(c *Cluster) (int, bool) {
	w := c.Work
	if w == nil || w.Record == nil || w.Record.Name != p.ro.Name || w.Revision != p.ro.Spec.To {
		return 0, false
	}
	for i, wv := range p.waves {
		if wv.Name == w.Record.Wave {
			return i, true
		}
	}
	return 0, false
}

// waveStatuses starts from the last status of each wave that still exists.
func (p *planner) waveStatuses() []flv1.WaveStatus {
	prev := map[string]flv1.WaveStatus{}
	for _, w := range p.ro.Status.Waves {
		prev[w.Name] = w
	}
	out := make([]flv1.WaveStatus, len(p.waves))
	for i, w := range p.waves {
		ws, ok := prev[w.Name]
		if !ok {
			ws = flv1.WaveStatus{Name: w.Name, Phase: flv1.WavePending}
		}
		out[i] = ws
	}
	return out
}

// step decides, in order of precedence: rollback, halt, pause, then the waves.
func (p *planner) step() {
	spec := &p.ro.Spec
	if p.status.RollbackStartedAt != nil || spec.Rollback {
		p.rollBack(flv1.ReasonRollbackAsked)
		return
	}
	if p.status.Phase == flv1.PhaseSucceeded {
		p.keepDelivered()
		return
	}
	p.judge()
	allowed, used := p.budget()
	halt := ""
	switch {
	case spec.Abort:
		halt = flv1.ReasonAborted
	case used > allowed:
		halt = flv1.ReasonBudgetExhausted
	case p.status.HaltReason == flv1.ReasonWaveTimedOut:
		halt = flv1.ReasonWaveTimedOut
	}
	if !spec.Paused && p.status.PausedAt != nil {
		p.resume()
	}
	if halt == "" && !spec.Paused {
		halt = p.checkWaveTimeout()
	}
	if halt != "" {
		p.status.HaltReason = halt
		if halt != flv1.ReasonAborted && spec.Strategy.OnFailure == flv1.FailureRollback {
			p.rollBack(halt)
			return
		}
		p.status.Phase = flv1.PhaseHalted
		p.holdNewcomers()
		return
	}
	// A budget halt clears once the budget covers the failures again (someone raised it).
	p.status.HaltReason = ""
	if spec.Paused {
		if p.status.PausedAt == nil {
			p.status.PausedAt = &p.mnow
		}
		p.status.Phase = flv1.PhasePaused
		p.holdNewcomers()
		return
	}
	p.advance()
}

// judge counts as failed every cluster this rollout moved that has not been healthy for
// the progress deadline (since its move, or since it last stopped being available).
func (p *planner) judge() {
	for _, m := range p.members {
		if !m.updated || m.healthy || m.failed != nil {
			continue
		}
		rec := m.Work.Record
		if rec == nil || rec.Name != p.ro.Name {
			continue // adopted below, judged from then on
		}
		since := rec.MovedAt.Time
		if m.Work.UnhealthySince.After(since) {
			since = m.Work.UnhealthySince
		}
		due := since.Add(p.deadline)
		if p.now.Before(due) {
			p.wakeAt(due)
			continue
		}
		reason := m.Work.Problem
		if reason == "" {
			reason = "no status from the agent"
		}
		if !m.Reachable {
			reason = "unreachable (no heartbeat): " + reason
		}
		reason = fmt.Sprintf("not healthy %s after the update: %s", p.deadline, reason)
		failed := *rec
		failed.FailedAt, failed.FailureReason = &p.mnow, reason
		m.failed = &failed
		m.write = &Write{Cluster: m.Name, Revision: m.Work.Revision, Record: &failed}
		p.events = append(p.events, Event{Warning: true, Reason: "ClusterFailed", Message: fmt.Sprintf("cluster %s (wave %s) failed: %s", m.Name, rec.Wave, reason)})
	}
}

// budget returns the failures allowed and used so far.
func (p *planner) budget() (allowed, used int32) {
	for _, m := range p.members {
		if m.failed != nil {
			used++
		}
	}
	b := p.ro.Spec.Strategy.FailureBudget
	if b == nil {
		return 0, used
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(b, len(p.members), false)
	if err != nil {
		return 0, used
	}
	return int32(n), used
}

// checkWaveTimeout marks the first started, unpassed wave whose time is up.
func (p *planner) checkWaveTimeout() string {
	for i := range p.status.Waves {
		ws := &p.status.Waves[i]
		if ws.Phase == flv1.WavePassed || ws.StartedAt == nil || ws.TimeoutAt == nil {
			continue
		}
		if !p.now.Before(ws.TimeoutAt.Time) {
			ws.Phase = flv1.WaveTimedOut
			return flv1.ReasonWaveTimedOut
		}
		p.wakeAt(ws.TimeoutAt.Time)
	}
	return ""
}

// resume ends a pause: the running waves' timeouts move by the time spent paused.
func (p *planner) resume() {
	paused := p.now.Sub(p.status.PausedAt.Time)
	for i := range p.status.Waves {
		ws := &p.status.Waves[i]
		if ws.TimeoutAt != nil && ws.Phase != flv1.WavePassed {
			t := metav1.NewTime(ws.TimeoutAt.Add(paused))
			ws.TimeoutAt = &t
		}
	}
	p.status.PausedAt = nil
}

// advance walks the waves in order: passed waves stay passed (newcomers to them move at
// once, within the wave's concurrency); the first unpassed wave starts, moves clusters,
// soaks and passes; later waves wait.
func (p *planner) advance() {
	p.status.Phase = flv1.PhaseProgressing
	for i, w := range p.waves {
		ws := &p.status.Waves[i]
		members := p.inWave(i)
		if ws.Phase == flv1.WavePassed {
			p.moveWithin(w, members)
			continue
		}
		if len(members) == 0 {
			// Nothing to wait for: an empty wave neither asks for approval nor soaks.
			p.startWave(ws)
			p.passWave(ws, "it has no clusters")
			continue
		}
		if ws.StartedAt == nil {
			if w.Approval && !p.approved(w.Name) {
				ws.Phase = flv1.WaveWaitingForApproval
				p.status.Phase = flv1.PhaseWaitingForApproval
				break
			}
			p.startWave(ws)
		}
		p.moveWithin(w, members)
		done := true
		for _, m := range members {
			if !m.updated || (!m.healthy && m.failed == nil) {
				done = false
			}
		}
		if !done {
			ws.Phase, ws.SoakStartedAt = flv1.WaveProgressing, nil
			break
		}
		if ws.SoakStartedAt == nil {
			ws.SoakStartedAt = &p.mnow
		}
		soak := time.Duration(0)
		if w.Soak != nil {
			soak = w.Soak.Duration
		}
		if end := ws.SoakStartedAt.Add(soak); p.now.Before(end) {
			ws.Phase = flv1.WaveSoaking
			p.status.Phase = flv1.PhaseSoaking
			p.wakeAt(end)
			break
		}
		p.passWave(ws, "")
	}
	if p.status.Waves[len(p.status.Waves)-1].Phase == flv1.WavePassed {
		p.status.Phase = flv1.PhaseSucceeded
		p.status.FinishedAt = &p.mnow
	}
	p.holdNewcomers()
}

func (p *planner) startWave(ws *flv1.WaveStatus) {
	ws.StartedAt = &p.mnow
	ws.Phase = flv1.WaveProgressing
	if t := p.ro.Spec.Strategy.WaveTimeout; t != nil && t.Duration > 0 {
		at := metav1.NewTime(p.now.Add(t.Duration))
		ws.TimeoutAt = &at
		p.wakeAt(at.Time)
	}
}

func (p *planner) passWave(ws *flv1.WaveStatus, why string) {
	ws.Phase, ws.FinishedAt, ws.TimeoutAt = flv1.WavePassed, &p.mnow, nil
	msg := fmt.Sprintf("wave %s passed", ws.Name)
	if why != "" {
		msg += ": " + why
	}
	p.events = append(p.events, Event{Reason: "WavePassed", Message: msg})
}

func (p *planner) approved(wave string) bool {
	for _, a := range p.ro.Spec.Approvals {
		if a.Wave == wave {
			return true
		}
	}
	return false
}

func (p *planner) inWave(i int) []*member {
	var out []*member
	for _, m := range p.members {
		if m.wave == i {
			out = append(out, m)
		}
	}
	return out
}

// moveWithin moves the wave's clusters that are not on the new revision yet, reachable ones
// first and then by name, while fewer than maxConcurrent are updating. It also adopts
// clusters already on the new revision without this rollout's record, so their deadline runs.
func (p *planner) moveWithin(w flv1.Wave, members []*member) {
	limit := len(members)
	if w.MaxConcurrent != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(w.MaxConcurrent, len(members), true)
		if err == nil {
			limit = max(n, 1)
		}
	}
	inflight := 0
	var candidates []*member
	for _, m := range members {
		switch {
		case m.updated && (m.Work.Record == nil || m.Work.Record.Name != p.ro.Name):
			m.write = &Write{Cluster: m.Name, Revision: p.ro.Spec.To, Record: p.record(w.Name)}
			if !m.healthy {
				inflight++
				p.wakeAt(p.now.Add(p.deadline))
			}
		case m.updated:
			if !m.healthy && m.failed == nil {
				inflight++
			}
		default:
			candidates = append(candidates, m)
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool { return candidates[i].Reachable && !candidates[j].Reachable })
	for _, m := range candidates {
		if inflight >= limit {
			break
		}
		m.write = &Write{Cluster: m.Name, Revision: p.ro.Spec.To, Record: p.record(w.Name)}
		m.updated, m.healthy = true, false
		inflight++
		p.wakeAt(p.now.Add(p.deadline))
	}
}

func (p *planner) record(wave string) *flv1.WorkRollout {
	return &flv1.WorkRollout{Name: p.ro.Name, Wave: wave, MovedAt: p.mnow}
}

// keepDelivered, once the rollout succeeded, gives the new revision to clusters that join.
func (p *planner) keepDelivered() {
	for _, m := range p.members {
		if !m.updated && m.write == nil {
			m.write = &Write{Cluster: m.Name, Revision: p.ro.Spec.To, Record: p.record(p.waves[m.wave].Name)}
			m.updated = true
		}
	}
}

// holdNewcomers gives clusters without a Work the from-revision, so that a cluster joining
// mid-rollout runs what the fleet runs until its wave moves it.
func (p *planner) holdNewcomers() {
	if p.ro.Spec.From == "" {
		return
	}
	for _, m := range p.members {
		if m.Work == nil && m.write == nil {
			m.write = &Write{Cluster: m.Name, Revision: p.ro.Spec.From}
		}
	}
}

// rollBack returns every cluster not on the from-revision to it, all at once, and waits
// until every reachable one applied it. Unreachable ones stay pending: their Work already
// says From, and their agent applies it when it returns.
func (p *planner) rollBack(why string) {
	if p.status.RollbackStartedAt == nil {
		p.status.RollbackStartedAt = &p.mnow
		if why != flv1.ReasonRollbackAsked {
			p.status.HaltReason = why
		}
	}
	from := p.ro.Spec.From
	var pending []string
	reachablePending := false
	for _, m := range p.members {
		if m.Work == nil {
			if from != "" && m.write == nil {
				m.write = &Write{Cluster: m.Name, Revision: from}
			}
			continue
		}
		if m.Work.Revision != from {
			rec := p.record(p.waves[m.wave].Name)
			if m.failed != nil {
				rec = m.failed.DeepCopy()
				rec.MovedAt = p.mnow
			}
			m.write = &Write{Cluster: m.Name, Revision: from, Record: rec, Remove: from == ""}
			m.updated, m.healthy = false, false
			if from == "" {
				continue
			}
		}
		if m.Work.AppliedRevision != from {
			pending = append(pending, m.Name)
			reachablePending = reachablePending || m.Reachable
		}
	}
	p.status.PendingRollbackCount = int32(len(pending))
	p.status.PendingRollback = pending[:min(len(pending), MaxListed)]
	if reachablePending {
		p.status.Phase = flv1.PhaseRollingBack
		p.status.FinishedAt = nil
		return
	}
	if p.status.Phase != flv1.PhaseRolledBack || p.status.FinishedAt == nil {
		p.status.FinishedAt = &p.mnow
	}
	p.status.Phase = flv1.PhaseRolledBack
}

func (p *planner) wakeAt(t time.Time) {
	if !t.After(p.now) {
		return
	}
	if p.wake.IsZero() || t.Before(p.wake) {
		p.wake = t
	}
}
