package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/join"
)

func readyCondition(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	mc := &flv1.MemberCluster{}
	if err := hubC.Get(context.Background(), types.NamespacedName{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(mc.Status.Conditions, flv1.ConditionReady)
}

// TestStoppedAgentBecomesUnreachable stops one agent: the hub marks its cluster Unreachable
// within the grace period (5 x the 1 s heartbeat), and Ready again once the agent restarts.
func TestStoppedAgentBecomesUnreachable(t *testing.T) {
	name := ensureJoined(t, 1)
	if c := readyCondition(t, name); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("%s not Ready before the test: %+v", name, c)
	}
	if stopped, err := join.StopLocalAgent(stateDir, name, false); err != nil || !stopped {
		t.Fatalf("stop agent: stopped=%v err=%v", stopped, err)
	}
	stoppedAt := time.Now()
	const grace = 5 * heartbeatInterval
	// The last heartbeat was at most one interval before the stop; the hub re-checks one
	// second after the grace ends. Allow two seconds more for a loaded machine.
	eventually(t, grace+heartbeatInterval+3*time.Second, "Ready=False/Unreachable", func() error {
		c := readyCondition(t, name)
		if c.Status != metav1.ConditionFalse || c.Reason != flv1.ReasonUnreachable {
			return fmt.Errorf("ready=%s reason=%s", c.Status, c.Reason)
		}
		return nil
	})
	took := time.Since(stoppedAt)
	if took < grace-heartbeatInterval {
		t.Errorf("marked unreachable %s after the stop, before the %s grace could pass", took, grace)
	}
	t.Logf("unreachable %s after the agent stopped (grace %s)", took.Round(10*time.Millisecond), grace)
	out := mustFlotilla(t, "get", "clusters", name)
	if !strings.Contains(out, "Unreachable") {
		t.Errorf("get clusters does not show Unreachable:\n%s", out)
	}

	if _, err := join.RestartLocalAgent(stateDir, binary, name); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Ready=True after restart", func() error {
		c := readyCondition(t, name)
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready=%s reason=%s", c.Status, c.Reason)
		}
		return nil
	})
}

// TestPausedAgentReadyAgain freezes one agent's process past the grace period and thaws it:
// the same agent (same Lease holder) renews late. Renewals on time are filtered out before
// they reach the hub's queue; a late one must not be (renewalMatters), and the hub's re-check
// of an Unreachable cluster every interval is the backstop.
func TestPausedAgentReadyAgain(t *testing.T) {
	name := ensureJoined(t, 1)
	la, err := join.LoadLocalAgent(stateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(la.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(la.Pid, syscall.SIGCONT)
		}
	}
	defer thaw()
	const grace = 5 * heartbeatInterval
	eventually(t, grace+heartbeatInterval+3*time.Second, "Ready=False/Unreachable while frozen", func() error {
		if c := readyCondition(t, name); c.Status != metav1.ConditionFalse || c.Reason != flv1.ReasonUnreachable {
			return fmt.Errorf("ready=%s reason=%s", c.Status, c.Reason)
		}
		return nil
	})
	thaw()
	thawedAt := time.Now()
	// The agent's next heartbeat is due at once (its sleep ran out while frozen).
	eventually(t, 5*time.Second, "Ready=True after thawing", func() error {
		if c := readyCondition(t, name); c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready=%s reason=%s", c.Status, c.Reason)
		}
		return nil
	})
	t.Logf("Ready again %s after the agent was thawed", time.Since(thawedAt).Round(10*time.Millisecond))
}
