package e2e

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"flotilla.dev/flotilla/internal/proc"
)

func hubLeader(t *testing.T) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: "flotilla-system", Name: "flotilla-hub"}, l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestHubLeaderElection: a second hub replica waits while the first leads; when the first
// stops, the second takes over and keeps the inventory working.
func TestHubLeaderElection(t *testing.T) {
	// The hub is ready before it has won the election the first time: wait for a leader.
	var first string
	eventually(t, 30*time.Second, "a hub leader", func() error {
		l := &coordinationv1.Lease{}
		if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: "flotilla-system", Name: "flotilla-hub"}, l); err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		first = *l.Spec.HolderIdentity
		return nil
	})
	// The standby serves no probes (the leader holds that port) and its metrics elsewhere.
	ports, err := proc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	standbyMetrics, standbyWebhook := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	args := slices.Clone(hubProc.Args)
	for i := range args {
		switch args[i] {
		case "--health-probe-bind-address":
			args[i+1] = "0"
		case "--metrics-bind-address":
			args[i+1] = standbyMetrics
		case "--webhook-bind-address":
			args[i+1] = standbyWebhook
		}
	}
	standby, err := proc.Start("hub-2", hubProc.Path, args, hubProc.LogFile+".2", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if hubProc != standby {
			standby.Kill()
		}
		ensureHubRunning(t)
	})
	time.Sleep(3 * time.Second)
	if standby.Exited() {
		t.Fatalf("the standby hub exited:\n%s", proc.Tail(standby.LogFile, 20))
	}
	if got := hubLeader(t); got != first {
		t.Fatalf("leader changed from %q to %q while the first hub was running", first, got)
	}
	// A graceful stop releases the lease, so the standby need not wait for it to expire.
	_ = syscall.Kill(hubProc.Pid, syscall.SIGTERM)
	stopped := time.Now()
	if !proc.WaitGone(hubProc.Pid, 30*time.Second) {
		hubProc.Kill()
	}
	eventually(t, 30*time.Second, "the standby hub leads", func() error {
		if got := hubLeader(t); got == first || got == "" {
			return fmt.Errorf("leader is %q", got)
		}
		return nil
	})
	t.Logf("standby took over %s after the leader was told to stop", time.Since(stopped).Round(100*time.Millisecond))
	hubProc, hubMetrics, hubWebhook = standby, "http://"+standbyMetrics+"/metrics", "http://"+standbyWebhook

	// The new leader does the work: a join needs it to provision the cluster's identity and
	// wait for the agent's heartbeat; an unjoin needs it to revoke and release.
	m := env.Members[4]
	mustFlotilla(t, "join", m.Name, "--member-kubeconfig", m.Kubeconfig, "--local", "--labels", memberLabels(4),
		"--agent-arg=--heartbeat-interval=1s")
	mustFlotilla(t, "unjoin", m.Name)
}

// ensureHubRunning restarts the hub controllers if a test left them stopped, so that one
// failure does not cascade into every later test.
func ensureHubRunning(t *testing.T) {
	if !hubProc.Exited() {
		return
	}
	p, err := proc.Start(hubProc.Name, hubProc.Path, hubProc.Args, hubProc.LogFile, false)
	if err != nil {
		t.Errorf("restart hub: %v", err)
		return
	}
	hubProc = p
}
