package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/join"
)

// TestDriftCorrectedWhileHubDown: with the hub's API server stopped, the agent keeps
// correcting drift from its member-side cache, also after the agent restarts; when the
// hub returns, status is reported again.
func TestDriftCorrectedWhileHubDown(t *testing.T) {
	ctx := context.Background()
	c := ensureJoined(t, 3)
	createBundle(t, "team-offline", "edge", []string{c}, nil, configMapObj("cfg", map[string]any{"level": "info"}))
	waitBundle(t, "team-offline", "edge", 60*time.Second, "edge ready", bundleReady(1))

	env.Hub.StopAPIServer()
	restarted := false
	defer func() {
		if !restarted {
			_ = env.StartAPIServer(ctx, env.Hub)
		}
	}()
	setMemberConfigMapValue(t, 3, "edge", "cfg", "level", "debug")
	waitMemberConfigMap(t, 3, "edge", "cfg", 15*time.Second, "corrected with the hub down", hasValue("level", "info"))

	if _, err := join.StopLocalAgent(stateDir, c, false); err != nil {
		t.Fatal(err)
	}
	restartedAt := time.Now()
	if _, err := join.RestartLocalAgent(stateDir, binary, c); err != nil {
		t.Fatal(err)
	}
	setMemberConfigMapValue(t, 3, "edge", "cfg", "level", "trace")
	start := time.Now()
	waitMemberConfigMap(t, 3, "edge", "cfg", 30*time.Second, "corrected by a restarted agent with the hub down", hasValue("level", "info"))
	t.Logf("a restarted agent corrected drift from its cache %s after the edit, hub down", time.Since(start).Round(time.Millisecond))

	if err := env.StartAPIServer(ctx, env.Hub); err != nil {
		t.Fatal(err)
	}
	restarted = true
	ensureHubRunning(t)
	// The restarted agent's status (applied from its cache while the hub was down) reaches
	// the hub once it is back.
	waitWork(t, c, "team-offline", "edge", 45*time.Second, "status reported again after the outage", func(w *flv1.Work) error {
		if w.Status.LastAppliedTime == nil || w.Status.LastAppliedTime.Time.Before(restartedAt.Truncate(time.Second)) {
			return fmt.Errorf("last applied %v, before the agent restarted at %s", w.Status.LastAppliedTime, restartedAt.Format(time.RFC3339))
		}
		if a := workCondition(w, flv1.ConditionAvailable); a == nil || a.Status != "True" {
			return fmt.Errorf("available: %+v", a)
		}
		return nil
	})
}
