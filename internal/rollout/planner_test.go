package rollout

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
func atp(d time.Duration) *metav1.Time {
	t := at(d)
	return &t
}
func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
func num(n int) *intstr.IntOrString        { v := intstr.FromInt32(int32(n)); return &v }
func pct(s string) *intstr.IntOrString     { v := intstr.FromString(s); return &v }

func sel(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

// threeWaves: canary (ring 0, one at a time, 5m soak), prod-eu (approval, 50%), then remaining.
func threeWaves() flv1.RolloutStrategy {
	return flv1.RolloutStrategy{
		Waves: []flv1.Wave{
			{Name: "canary", ClusterSelector: sel("ring", "0"), MaxConcurrent: num(1), Soak: dur(5 * time.Minute)},
			{Name: "prod-eu", ClusterSelector: sel("env", "prod", "region", "eu"), MaxConcurrent: pct("50%"), Approval: true},
		},
		ProgressDeadline: dur(10 * time.Minute),
		FailureBudget:    num(1),
	}
}

func rolloutOf(s flv1.RolloutStrategy, mutate ...func(*flv1.Rollout)) *flv1.Rollout {
	ro := &flv1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "team"},
		Spec: flv1.RolloutSpec{Bundle: "web", From: "web-a", To: "web-b", Strategy: s}}
	for _, m := range mutate {
		m(ro)
	}
	return ro
}

// cl builds a cluster on revision rev ("" = no Work). Options: "healthy", "unreachable",
// "moved@<minutes>" (this rollout moved it then), "failed@<minutes>", "wave=<name>",
// "applied=<rev>".
func cl(name, rev string, lbls map[string]string, opts ...string) Cluster {
	c := Cluster{Name: name, Labels: lbls, Reachable: true}
	if rev == "" {
		return c
	}
	w := &Work{Revision: rev, AppliedRevision: rev}
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		switch {
		case o == "healthy":
			w.Healthy = true
		case o == "unreachable":
			c.Reachable = false
		case k == "applied":
			w.AppliedRevision = v
		case strings.HasPrefix(o, "moved@"):
			d, _ := time.ParseDuration(strings.TrimPrefix(o, "moved@"))
			if w.Record == nil {
				w.Record = &flv1.WorkRollout{Name: "web-2"}
			}
			w.Record.MovedAt = at(d)
		case strings.HasPrefix(o, "failed@"):
			d, _ := time.ParseDuration(strings.TrimPrefix(o, "failed@"))
			w.Record.FailedAt, w.Record.FailureReason = atp(d), "broken"
		case k == "wave":
			w.Record.Wave = v
		case k == "problem":
			w.Problem = v
		}
	}
	if !w.Healthy && w.Problem == "" && w.Revision == "web-b" {
		w.Problem = "InProgress: Deployment web: 0 of 2 pods ready"
	}
	c.Work = w
	return c
}

var (
	ring0  = map[string]string{"ring": "0", "env": "dev", "region": "eu"}
	prodEU = map[string]string{"env": "prod", "region": "eu"}
	prodUS = map[string]string{"env": "prod", "region": "us"}
)

// fleet: 2 canaries, 2 prod-eu, 2 others (remaining).
func fleet(revs map[string][]string) []Cluster {
	names := []struct {
		n string
		l map[string]string
	}{{"c1", ring0}, {"c2", ring0}, {"eu1", prodEU}, {"eu2", prodEU}, {"us1", prodUS}, {"us2", prodUS}}
	var out []Cluster
	for _, x := range names {
		spec, ok := revs[x.n]
		if !ok {
			spec = []string{"web-a", "healthy"}
		}
		out = append(out, cl(x.n, spec[0], x.l, spec[1:]...))
	}
	return out
}

func writes(p Plan) string {
	var s []string
	for _, w := range p.Writes {
		x := w.Cluster + "->" + w.Revision
		if w.Remove {
			x = w.Cluster + "->removed"
		}
		if w.Record != nil && w.Record.FailedAt != nil {
			x += "(failed)"
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

func waveState(st flv1.RolloutStatus) string {
	var s []string
	for _, w := range st.Waves {
		s = append(s, w.Name+":"+string(w.Phase))
	}
	return strings.Join(s, " ")
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		ro       *flv1.Rollout
		clusters []Cluster
		now      time.Duration
		// expectations
		phase    flv1.RolloutPhase
		waves    string
		writes   string
		budget   string // "used/allowed"
		requeue  time.Duration
		contains string // in the message
		check    func(*testing.T, Plan)
	}{{
		name:     "first step: canary wave starts with one cluster at a time",
		ro:       rolloutOf(threeWaves()),
		clusters: fleet(nil),
		phase:    flv1.PhaseProgressing,
		waves:    "canary:Progressing prod-eu:Pending remaining:Pending",
		writes:   "c1->web-b",
		budget:   "0/1",
		requeue:  10 * time.Minute,
		contains: "wave canary: 1/2 updated",
	}, {
		name: "concurrency: the second canary waits while the first is updating",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary"}}),
		now:      time.Minute,
		phase:    flv1.PhaseProgressing,
		writes:   "",
		requeue:  9 * time.Minute,
	}, {
		name: "concurrency: a healthy canary frees its slot for the next",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}}),
		now:      time.Minute,
		writes:   "c2->web-b",
	}, {
		name: "unreachable clusters move after reachable ones",
		ro:   rolloutOf(threeWaves()),
		clusters: fleet(map[string][]string{
			"c1": {"web-a", "healthy", "unreachable"},
		}),
		writes: "c2->web-b",
	}, {
		name: "soak: a wave whose clusters are all healthy soaks before it passes",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: fleet(map[string][]string{
			"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}, "c2": {"web-b", "moved@1m", "wave=canary", "healthy"},
		}),
		now:      2 * time.Minute,
		phase:    flv1.PhaseSoaking,
		waves:    "canary:Soaking prod-eu:Pending remaining:Pending",
		requeue:  5 * time.Minute,
		contains: "wave canary soaking: 2/2 healthy",
	}, {
		name: "soak over: the wave passes and the next asks for approval",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveSoaking, StartedAt: atp(0), SoakStartedAt: atp(2 * time.Minute)}}
		}),
		clusters: fleet(map[string][]string{
			"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}, "c2": {"web-b", "moved@1m", "wave=canary", "healthy"},
		}),
		now:      7 * time.Minute,
		phase:    flv1.PhaseWaitingForApproval,
		waves:    "canary:Passed prod-eu:WaitingForApproval remaining:Pending",
		writes:   "",
		contains: "flotilla rollout approve web -n team --wave prod-eu",
		check: func(t *testing.T, p Plan) {
			if !hasEvent(p, "WavePassed", "wave canary passed") {
				t.Errorf("no WavePassed event: %+v", p.Events)
			}
		},
	}, {
		name: "a cluster turning unhealthy during soak restarts the soak",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveSoaking, StartedAt: atp(0), SoakStartedAt: atp(2 * time.Minute)}}
		}),
		clusters: fleet(map[string][]string{
			"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}, "c2": {"web-b", "moved@1m", "wave=canary"},
		}),
		now:   4 * time.Minute,
		phase: flv1.PhaseProgressing,
		waves: "canary:Progressing prod-eu:Pending remaining:Pending",
		check: func(t *testing.T, p Plan) {
			if p.Status.Waves[0].SoakStartedAt != nil {
				t.Error("soak start kept")
			}
		},
	}, {
		name: "approval given: the wave starts, half of it at a time, and the event names the approver",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WavePassed, StartedAt: atp(0), FinishedAt: atp(7 * time.Minute)},
				{Name: "prod-eu", Phase: flv1.WaveWaitingForApproval}}
			r.Spec.Approvals = []flv1.Approval{{Wave: "prod-eu", By: "alice", At: at(8 * time.Minute), Comment: "canary looks good"}}
		}),
		clusters: fleet(map[string][]string{
			"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}, "c2": {"web-b", "moved@1m", "wave=canary", "healthy"},
		}),
		now:    9 * time.Minute,
		phase:  flv1.PhaseProgressing,
		waves:  "canary:Passed prod-eu:Progressing remaining:Pending",
		writes: "eu1->web-b",
		check: func(t *testing.T, p Plan) {
			if !hasEvent(p, "WaveStarted", "approved by alice: canary looks good") {
				t.Errorf("events: %+v", p.Events)
			}
		},
	}, {
		name: "an empty wave passes without asking for approval",
		ro: rolloutOf(flv1.RolloutStrategy{Waves: []flv1.Wave{
			{Name: "nobody", ClusterSelector: sel("env", "moon"), Approval: true, Soak: dur(time.Hour)},
		}}),
		clusters: fleet(nil),
		phase:    flv1.PhaseProgressing,
		waves:    "nobody:Passed remaining:Progressing",
		writes:   "c1->web-b c2->web-b eu1->web-b eu2->web-b us1->web-b us2->web-b",
	}, {
		name: "progress deadline: a moved cluster not healthy in time counts as failed, with the agent's reason",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary"}}),
		now:      10 * time.Minute,
		phase:    flv1.PhaseProgressing,
		writes:   "c1->web-b(failed) c2->web-b",
		budget:   "1/1",
		check: func(t *testing.T, p Plan) {
			f := p.Status.FailedClusters
			if len(f) != 1 || f[0].Cluster != "c1" || !strings.Contains(f[0].Reason, "0 of 2 pods ready") || f[0].Wave != "canary" {
				t.Errorf("failed clusters: %+v", f)
			}
			d := p.Status.FailuresByDimension
			if len(d) == 0 || d[0].Failed != 1 {
				t.Errorf("by dimension: %+v", d)
			}
		},
	}, {
		name: "an unreachable cluster counts as failed once its deadline passes, and the rollout goes on within budget",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: fleet(map[string][]string{
			"c1": {"web-b", "moved@0s", "wave=canary", "healthy"},
			"c2": {"web-b", "moved@1m", "wave=canary", "unreachable", "applied=web-a", "problem=not yet applied by the agent"},
		}),
		now:    11 * time.Minute,
		phase:  flv1.PhaseSoaking,
		writes: "c2->web-b(failed)",
		budget: "1/1",
		check: func(t *testing.T, p Plan) {
			if r := p.Status.FailedClusters[0].Reason; !strings.Contains(r, "unreachable") {
				t.Errorf("reason %q", r)
			}
			if !hasEvent(p, "ClusterFailed", "c2") {
				t.Errorf("events %+v", p.Events)
			}
		},
	}, {
		name: "a regression after being healthy is judged from when it stopped being available",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: func() []Cluster {
			f := fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary"}})
			f[0].Work.UnhealthySince = t0.Add(8 * time.Minute)
			return f
		}(),
		now:     12 * time.Minute,
		writes:  "",
		budget:  "0/1",
		requeue: 6 * time.Minute,
	}, {
		name: "budget exhausted: the rollout halts and moves nothing more",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WavePassed, StartedAt: atp(0), FinishedAt: atp(7 * time.Minute)},
				{Name: "prod-eu", Phase: flv1.WaveProgressing, StartedAt: atp(8 * time.Minute)}}
			r.Spec.Approvals = []flv1.Approval{{Wave: "prod-eu", By: "alice"}}
		}),
		clusters: fleet(map[string][]string{
			"c1":  {"web-b", "moved@0s", "wave=canary", "healthy"},
			"c2":  {"web-b", "moved@1m", "wave=canary", "healthy"},
			"eu1": {"web-b", "moved@8m", "wave=prod-eu", "failed@18m"},
			"eu2": {"web-b", "moved@9m", "wave=prod-eu"},
		}),
		now:      19 * time.Minute,
		phase:    flv1.PhaseHalted,
		writes:   "eu2->web-b(failed)",
		budget:   "2/1",
		contains: "halted: the failure budget is exhausted",
		check: func(t *testing.T, p Plan) {
			if !hasEvent(p, "Halted", "failure budget") {
				t.Errorf("events %+v", p.Events)
			}
			if p.Status.HaltReason != flv1.ReasonBudgetExhausted {
				t.Errorf("halt reason %q", p.Status.HaltReason)
			}
		},
	}, {
		name: "budget exhausted with onFailure Rollback: every moved cluster returns to A, the last wave is never touched",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Strategy.OnFailure = flv1.FailureRollback
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WavePassed, StartedAt: atp(0), FinishedAt: atp(7 * time.Minute)},
				{Name: "prod-eu", Phase: flv1.WaveProgressing, StartedAt: atp(8 * time.Minute)}}
		}),
		clusters: fleet(map[string][]string{
			"c1":  {"web-b", "moved@0s", "wave=canary", "healthy"},
			"c2":  {"web-b", "moved@1m", "wave=canary", "healthy"},
			"eu1": {"web-b", "moved@8m", "wave=prod-eu", "failed@18m"},
			"eu2": {"web-b", "moved@9m", "wave=prod-eu", "failed@19m"},
		}),
		now:      20 * time.Minute,
		phase:    flv1.PhaseRollingBack,
		writes:   "c1->web-a c2->web-a eu1->web-a(failed) eu2->web-a(failed)",
		budget:   "2/1",
		contains: "returning to web-a after the failure budget is exhausted; 4 clusters pending",
		check: func(t *testing.T, p Plan) {
			if p.Status.RollbackStartedAt == nil || p.Status.Clusters.Updated != 0 {
				t.Errorf("status %+v", p.Status)
			}
		},
	}, {
		name: "rolling back completes when every reachable cluster applied A; unreachable ones stay listed",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Rollback = true
			r.Status.Phase, r.Status.RollbackStartedAt = flv1.PhaseRollingBack, atp(20*time.Minute)
		}),
		clusters: fleet(map[string][]string{
			"c1": {"web-a", "moved@20m", "wave=canary", "healthy"},
			"c2": {"web-a", "moved@20m", "wave=canary", "applied=web-b", "unreachable"},
		}),
		now:      21 * time.Minute,
		phase:    flv1.PhaseRolledBack,
		writes:   "",
		contains: "1 clusters pending (c2)",
	}, {
		name: "rollback of a first delivery removes the Works it created",
		ro: rolloutOf(flv1.RolloutStrategy{}, func(r *flv1.Rollout) {
			r.Spec.From, r.Spec.Rollback = "", true
		}),
		clusters: []Cluster{cl("a", "web-b", prodEU, "moved@0s", "wave=remaining", "healthy"), cl("b", "", prodEU)},
		now:      time.Minute,
		phase:    flv1.PhaseRolledBack,
		writes:   "a->removed",
	}, {
		name:     "abort halts where it stands",
		ro:       rolloutOf(threeWaves(), func(r *flv1.Rollout) { r.Spec.Abort = true }),
		clusters: fleet(nil),
		phase:    flv1.PhaseHalted,
		writes:   "",
		contains: "halted: aborted",
	}, {
		name: "abort is not turned into a rollback by onFailure",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Abort, r.Spec.Strategy.OnFailure = true, flv1.FailureRollback
		}),
		clusters: fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}}),
		phase:    flv1.PhaseHalted,
		writes:   "",
	}, {
		name:     "pause: nothing moves",
		ro:       rolloutOf(threeWaves(), func(r *flv1.Rollout) { r.Spec.Paused = true }),
		clusters: fleet(nil),
		phase:    flv1.PhasePaused,
		writes:   "",
		check: func(t *testing.T, p Plan) {
			if p.Status.PausedAt == nil {
				t.Error("pausedAt not set")
			}
		},
	}, {
		name: "resume: the running wave's timeout moves by the time spent paused",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Strategy.WaveTimeout = dur(time.Hour)
			r.Status.PausedAt = atp(10 * time.Minute)
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0), TimeoutAt: atp(time.Hour)}}
		}),
		clusters: fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}}),
		now:      70 * time.Minute,
		phase:    flv1.PhaseProgressing,
		writes:   "c2->web-b",
		check: func(t *testing.T, p Plan) {
			if got := p.Status.Waves[0].TimeoutAt.Time; !got.Equal(t0.Add(2 * time.Hour)) {
				t.Errorf("timeout at %s", got)
			}
			if p.Status.PausedAt != nil {
				t.Error("still paused")
			}
		},
	}, {
		name: "wave timeout halts the rollout",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Strategy.WaveTimeout = dur(30 * time.Minute)
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0), TimeoutAt: atp(30 * time.Minute)}}
		}),
		clusters: fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary", "healthy"}, "c2": {"web-b", "moved@25m", "wave=canary"}}),
		now:      30 * time.Minute,
		phase:    flv1.PhaseHalted,
		waves:    "canary:TimedOut prod-eu:Pending remaining:Pending",
		writes:   "",
		contains: "a wave timed out",
		check: func(t *testing.T, p Plan) {
			if !hasEvent(p, "WaveTimedOut", "canary") {
				t.Errorf("events %+v", p.Events)
			}
		},
	}, {
		name: "a halted rollout stays halted after a wave timeout",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Phase, r.Status.HaltReason = flv1.PhaseHalted, flv1.ReasonWaveTimedOut
		}),
		clusters: fleet(nil),
		phase:    flv1.PhaseHalted,
		writes:   "",
	}, {
		name: "a budget halt resumes once someone raises the budget on the Rollout",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Strategy.FailureBudget = num(2)
			r.Status.Phase, r.Status.HaltReason = flv1.PhaseHalted, flv1.ReasonBudgetExhausted
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary", "failed@10m"}, "c2": {"web-b", "moved@0s", "wave=canary", "failed@10m"}}),
		now:      20 * time.Minute,
		phase:    flv1.PhaseSoaking, // both canaries failed within budget: the wave is done, and soaks
		writes:   "",
		budget:   "2/2",
	}, {
		name: "newcomers: a cluster that joins a wave not started yet runs A until its wave",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: append(fleet(map[string][]string{"c1": {"web-b", "moved@0s", "wave=canary"}}), cl("us3", "", prodUS)),
		now:      time.Minute,
		writes:   "us3->web-a",
	}, {
		name: "newcomers: a cluster that joins a running wave is moved within its concurrency",
		ro: rolloutOf(flv1.RolloutStrategy{}, func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "remaining", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: []Cluster{cl("a", "web-b", prodEU, "moved@0s", "wave=remaining"), cl("b", "", prodEU)},
		now:      time.Minute,
		writes:   "b->web-b",
	}, {
		name: "label change: an unmoved cluster follows its labels to another wave; a moved one keeps its wave",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: []Cluster{
			cl("c1", "web-b", prodUS, "moved@0s", "wave=canary", "healthy"), // was ring 0, relabelled
			cl("c2", "web-a", prodEU, "healthy"),                            // was ring 0, now prod-eu
		},
		now:    time.Minute,
		phase:  flv1.PhaseSoaking,
		waves:  "canary:Soaking prod-eu:Pending remaining:Pending",
		writes: "",
		check: func(t *testing.T, p Plan) {
			if p.Status.Waves[0].Clusters != 1 || p.Status.Waves[1].Clusters != 1 {
				t.Errorf("waves %+v", p.Status.Waves)
			}
		},
	}, {
		name: "a failed cluster that leaves the placement leaves the rollout, its failure included",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Strategy.FailureBudget = num(0)
			r.Status.Phase, r.Status.HaltReason = flv1.PhaseHalted, flv1.ReasonBudgetExhausted
			r.Status.Waves = []flv1.WaveStatus{{Name: "canary", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		// c1 failed and was then removed from the Bundle's placement: it is not in the input.
		clusters: fleet(map[string][]string{"c2": {"web-b", "moved@0s", "wave=canary", "healthy"}})[1:],
		now:      20 * time.Minute,
		phase:    flv1.PhaseSoaking,
		budget:   "0/0",
		check: func(t *testing.T, p Plan) {
			if p.Status.Clusters.Total != 5 || p.Status.Waves[0].Clusters != 1 {
				t.Errorf("counts %+v, waves %+v", p.Status.Clusters, p.Status.Waves)
			}
		},
	}, {
		name: "a cluster already on B without this rollout's record is adopted, so its deadline runs",
		ro: rolloutOf(flv1.RolloutStrategy{}, func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "remaining", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: []Cluster{cl("a", "web-b", prodEU)},
		now:      time.Minute,
		writes:   "a->web-b",
		check: func(t *testing.T, p Plan) {
			if r := p.Writes[0].Record; r == nil || r.Name != "web-2" || !r.MovedAt.Equal(ptr(at(time.Minute))) {
				t.Errorf("record %+v", r)
			}
		},
	}, {
		name: "the last wave passing completes the rollout",
		ro: rolloutOf(flv1.RolloutStrategy{}, func(r *flv1.Rollout) {
			r.Status.Waves = []flv1.WaveStatus{{Name: "remaining", Phase: flv1.WaveProgressing, StartedAt: atp(0)}}
		}),
		clusters: []Cluster{cl("a", "web-b", prodEU, "moved@0s", "wave=remaining", "healthy")},
		now:      time.Minute,
		phase:    flv1.PhaseSucceeded,
		check: func(t *testing.T, p Plan) {
			if p.Status.FinishedAt == nil || p.Status.UpdatedPercent != 100 {
				t.Errorf("status %+v", p.Status)
			}
			if c := findCond(p.Status, flv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("ready %+v", c)
			}
		},
	}, {
		name: "after success a cluster that joins gets B at once",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Status.Phase, r.Status.FinishedAt = flv1.PhaseSucceeded, atp(time.Hour)
		}),
		clusters: []Cluster{cl("a", "web-b", prodEU, "moved@0s", "wave=prod-eu", "healthy"), cl("b", "", prodEU)},
		now:      2 * time.Hour,
		phase:    flv1.PhaseSucceeded,
		writes:   "b->web-b",
	}, {
		name: "undo after success returns the whole fleet to A",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Rollback = true
			r.Status.Phase, r.Status.FinishedAt = flv1.PhaseSucceeded, atp(time.Hour)
		}),
		clusters: fleet(map[string][]string{
			"c1": {"web-b", "healthy"}, "c2": {"web-b", "healthy"}, "eu1": {"web-b", "healthy"},
			"eu2": {"web-b", "healthy"}, "us1": {"web-b", "healthy"}, "us2": {"web-b", "healthy"},
		}),
		now:    2 * time.Hour,
		phase:  flv1.PhaseRollingBack,
		writes: "c1->web-a c2->web-a eu1->web-a eu2->web-a us1->web-a us2->web-a",
	}, {
		name:     "superseded: nothing moves any more",
		ro:       rolloutOf(threeWaves(), func(r *flv1.Rollout) { r.Status.Phase = flv1.PhaseSuperseded }),
		clusters: fleet(nil),
		phase:    flv1.PhaseSuperseded,
		writes:   "",
	}, {
		name: "percent budget rounds down: 20% of 6 clusters allows 1",
		ro: rolloutOf(threeWaves(), func(r *flv1.Rollout) {
			r.Spec.Strategy.FailureBudget = pct("20%")
		}),
		clusters: fleet(nil),
		writes:   "*",
		budget:   "0/1",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.ro.DeepCopy()
			p, err := Compute(tc.ro, tc.clusters, t0.Add(tc.now))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(before, tc.ro) {
				t.Error("Compute changed its input")
			}
			if tc.phase != "" && p.Status.Phase != tc.phase {
				t.Errorf("phase %s, want %s (%s)", p.Status.Phase, tc.phase, p.Status.Message)
			}
			if tc.waves != "" && waveState(p.Status) != tc.waves {
				t.Errorf("waves %q, want %q", waveState(p.Status), tc.waves)
			}
			if got := writes(p); tc.writes != "*" && got != tc.writes {
				t.Errorf("writes %q, want %q", got, tc.writes)
			}
			if tc.budget != "" {
				if got := budgetOf(p.Status); got != tc.budget {
					t.Errorf("budget %s, want %s", got, tc.budget)
				}
			}
			if tc.requeue != 0 && p.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %s, want %s", p.RequeueAfter, tc.requeue)
			}
			if !strings.Contains(p.Status.Message, tc.contains) {
				t.Errorf("message %q does not contain %q", p.Status.Message, tc.contains)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
			again, _ := Compute(tc.ro, tc.clusters, t0.Add(tc.now))
			if !reflect.DeepEqual(p, again) {
				t.Error("the same input gave another plan")
			}
		})
	}
}

func ptr(t metav1.Time) *metav1.Time { return &t }

func budgetOf(st flv1.RolloutStatus) string {
	return fmt.Sprintf("%d/%d", st.FailureBudget.Used, st.FailureBudget.Allowed)
}

func hasEvent(p Plan, reason, text string) bool {
	for _, e := range p.Events {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

func findCond(st flv1.RolloutStatus, typ string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}
