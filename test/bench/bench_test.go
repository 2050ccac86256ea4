// Package bench keeps `flotilla bench` working in `make test`: every scenario at a small
// fleet size, against a real hub API server, with the flotilla binary built from this tree.
package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"flotilla.dev/flotilla/internal/bench"
)

func TestBenchSmoke(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "flotilla")
	// flotilla-agent next to flotilla, as `make build` leaves them: the agent scenario must run it.
	for _, cmd := range []string{"flotilla", "flotilla-agent"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "flotilla.dev/flotilla/cmd/"+cmd).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}
	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.FleetOptions{
		Options: bench.Options{Binary: bin, Log: &progress},
		Runs:    1, IdleFor: 5 * time.Second, BundlesPerCluster: 3,
	}, []int{9})
	if rep != nil {
		rep.WriteTable(os.Stdout)
	}
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	want := map[string][]string{
		bench.ScenarioJoin:    {"p99"},
		bench.ScenarioFanout:  {"p99", "reached the agents: p99", "baseline (best)", "total / baseline", "API writes per cluster (all)"},
		bench.ScenarioRollout: {"3-wave rollout", "rollout / fan-out"},
		bench.ScenarioThrottle: {"throttled: total", "throttled / unthrottled", "hub requests rejected (429)",
			"hub Bundle reconciles failed and retried", "clusters that applied the change"},
		bench.ScenarioIdle:  {"hub controllers: CPU", "all: memory per cluster", "API writes per cluster per minute (all)"},
		bench.ScenarioAgent: {"executable flotilla-agent: size", "idle: resident memory", "idle: CPU", "delivery: peak resident memory"},
	}
	for _, r := range rep.Results {
		names, ok := want[r.Scenario]
		if !ok {
			t.Errorf("unexpected scenario %q", r.Scenario)
			continue
		}
		delete(want, r.Scenario)
		for _, n := range names {
			m, ok := r.Get(n)
			if !ok {
				t.Errorf("%s: no metric %q", r.Scenario, n)
			}
			// Times, ratios and resident memory are positive in any real run; CPU may be 0
			// for an idle process over a few seconds, memory growth may be negative.
			if ok && m.Value <= 0 && (m.Unit == "s" || m.Unit == "x" || m.Name == "idle: resident memory") {
				t.Errorf("%s: %s = %v %s, want > 0", r.Scenario, n, m.Value, m.Unit)
			}
		}
	}
	// A change costs at least the hub's Work write and the agent's status write per cluster.
	for _, r := range rep.Results {
		if m, ok := r.Get("API writes per cluster (all)"); ok && r.Scenario == bench.ScenarioFanout && m.Value < 2 {
			t.Errorf("fanout: %v API writes per cluster, want at least 2 (Work and its status)", m.Value)
		}
	}
	// Throttling must really have happened: the API server rejected hub requests (the
	// scenario itself fails unless every cluster still applied the change).
	for _, r := range rep.Results {
		if r.Scenario != bench.ScenarioThrottle {
			continue
		}
		if m, _ := r.Get("hub requests rejected (429)"); m.Value < 1 {
			t.Errorf("throttle: the API server rejected %v hub requests, want some", m.Value)
		}
	}
	for s := range want {
		t.Errorf("scenario %s did not report", s)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil || !bytes.Contains(js.Bytes(), []byte(`"agents": "simulated"`)) {
		t.Errorf("JSON report: %v\n%s", err, js.String())
	}
}
