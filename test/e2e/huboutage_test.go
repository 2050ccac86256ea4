package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/join"
	"flotilla.dev/flotilla/internal/proc"
)

// TestAgentSurvivesHubOutage stops the hub's API server: the agent keeps retrying and says
// so in its log; once the API server is back, heartbeats resume and the cluster is Ready.
func TestAgentSurvivesHubOutage(t *testing.T) {
	ctx := context.Background()
	name := ensureJoined(t, 0)
	la, err := join.LoadLocalAgent(stateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	logBefore, _ := os.ReadFile(la.LogFile)

	env.Hub.StopAPIServer()
	outage := time.Now()
	restarted := false
	defer func() {
		if !restarted {
			_ = env.StartAPIServer(ctx, env.Hub)
		}
	}()
	eventually(t, 20*time.Second, "agent logs that the hub is unreachable", func() error {
		b, _ := os.ReadFile(la.LogFile)
		if !strings.Contains(string(b[len(logBefore):]), "hub unreachable or failing, retrying") {
			return fmt.Errorf("no retry message yet")
		}
		return nil
	})
	if !proc.Alive(la.Pid) {
		t.Fatal("the agent exited during the hub outage")
	}
	if err := env.StartAPIServer(ctx, env.Hub); err != nil {
		t.Fatal(err)
	}
	restarted = true
	t.Logf("hub API server was down for %s", time.Since(outage).Round(100*time.Millisecond))

	// The hub controllers may have given up leadership during the outage and exited, as a
	// leader-elected controller should; a supervisor (here: the test) starts them again.
	if hubProc.Exited() {
		t.Log("flotilla hub exited during the outage (lost its leader lease); restarting it")
	}
	ensureHubRunning(t)
	back := time.Now()
	key := types.NamespacedName{Namespace: flv1.ClusterNamespace(name), Name: flv1.HeartbeatLeaseName}
	eventually(t, 45*time.Second, "heartbeat after the outage and Ready=True", func() error {
		lease := &coordinationv1.Lease{}
		if err := hubC.Get(ctx, key, lease); err != nil {
			return err
		}
		if !lease.Spec.RenewTime.Time.After(back) {
			return fmt.Errorf("no heartbeat since the API server returned")
		}
		if c := readyCondition(t, name); c == nil || c.Status != "True" {
			return fmt.Errorf("ready: %+v", c)
		}
		return nil
	})
	b, _ := os.ReadFile(la.LogFile)
	if !strings.Contains(string(b[len(logBefore):]), "hub reachable again") {
		t.Errorf("agent log does not say the hub is back:\n%s", b[len(logBefore):])
	}
	// Every other joined cluster recovers too, so later tests start from a healthy fleet.
	joinMu.Lock()
	names := make([]string, 0, len(joined))
	for n := range joined {
		names = append(names, n)
	}
	joinMu.Unlock()
	for _, n := range names {
		eventually(t, 30*time.Second, n+" Ready after the outage", func() error {
			if c := readyCondition(t, n); c == nil || c.Status != "True" {
				return fmt.Errorf("ready: %+v", c)
			}
			return nil
		})
	}
}
