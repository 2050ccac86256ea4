package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub"
)

// TestAgentRotatesItsToken joins a cluster with the shortest token the API server grants
// (10 minutes) and an agent told to rotate after 1% of it: the agent requests a new token
// from the hub, stores it on the member, and keeps heartbeating with it.
func TestAgentRotatesItsToken(t *testing.T) {
	ctx := context.Background()
	const i = 5
	m := env.Members[i]
	mustFlotilla(t, "join", m.Name, "--member-kubeconfig", m.Kubeconfig, "--local", "--labels", memberLabels(i),
		"--token-ttl", "10m", "--agent-arg=--heartbeat-interval=1s", "--agent-arg=--token-rotate-fraction=0.01")
	t.Cleanup(func() { _, _ = flotilla(t, "unjoin", m.Name) })
	first := agentToken(t, i)

	var rotated string
	eventually(t, 30*time.Second, "a rotated token stored on the member", func() error {
		if tok := agentToken(t, i); tok != first {
			rotated = tok
			return nil
		}
		return fmt.Errorf("token unchanged")
	})
	c, err := client.New(tokenConfig(rotated), client.Options{Scheme: hub.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, ownReport(m.Name), &flv1.MemberClusterReport{}); err != nil {
		t.Fatalf("the rotated token does not work on the hub: %v", err)
	}
	// Heartbeats go on after the rotation.
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: flv1.ClusterNamespace(m.Name), Name: flv1.HeartbeatLeaseName}
	if err := hubC.Get(ctx, key, lease); err != nil {
		t.Fatal(err)
	}
	before := lease.Spec.RenewTime.Time
	eventually(t, 10*time.Second, "heartbeat renewed after rotation", func() error {
		if err := hubC.Get(ctx, key, lease); err != nil {
			return err
		}
		if !lease.Spec.RenewTime.Time.After(before) {
			return fmt.Errorf("lease not renewed since %s", before)
		}
		return nil
	})
	if c := readyCondition(t, m.Name); c == nil || c.Status != "True" {
		t.Errorf("cluster not Ready after rotation: %+v", c)
	}
}
