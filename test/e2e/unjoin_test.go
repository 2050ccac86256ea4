package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent"
	"flotilla.dev/flotilla/internal/hub"
	"flotilla.dev/flotilla/internal/join"
	"flotilla.dev/flotilla/internal/proc"
)

// TestUnjoinRevokesCredentials: after unjoin the agent's old token gets 401, the agent is
// gone from the member and its process has stopped, and the hub's objects are removed.
func TestUnjoinRevokesCredentials(t *testing.T) {
	ctx := context.Background()
	const i = 3
	name := ensureJoined(t, i)
	token := agentToken(t, i)
	la, err := join.LoadLocalAgent(stateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(tokenConfig(token), client.Options{Scheme: hub.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, ownReport(name), &flv1.MemberClusterReport{}); err != nil {
		t.Fatalf("token does not work before unjoin: %v", err)
	}

	mustFlotilla(t, "unjoin", name)
	joinMu.Lock()
	delete(joined, name)
	joinMu.Unlock()

	// At once the token may do nothing (its bindings are gone); within the API server's
	// token-validation caching it is rejected outright.
	err = c.Get(ctx, ownReport(name), &flv1.MemberClusterReport{})
	if !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
		t.Fatalf("old token right after unjoin: want 401 or 403, got %v", err)
	}
	unjoined := time.Now()
	eventually(t, 30*time.Second, "old token rejected with 401", func() error {
		err := c.Get(ctx, ownReport(name), &flv1.MemberClusterReport{})
		if !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("got %v", err)
		}
		return nil
	})
	t.Logf("old token rejected with 401 %s after unjoin returned", time.Since(unjoined).Round(10*time.Millisecond))
	if proc.Alive(la.Pid) {
		t.Errorf("local agent (pid %d) still runs after unjoin", la.Pid)
	}
	if err := hubC.Get(ctx, types.NamespacedName{Name: name}, &flv1.MemberCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("MemberCluster after unjoin: %v", err)
	}
	member := memberClient(t, i)
	if _, err := member.CoreV1().Secrets(agent.SystemNamespace).Get(ctx, agent.CredentialsSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("credentials Secret on the member after unjoin: %v", err)
	}
	// Namespaces terminate asynchronously (the namespace controller empties them first).
	eventually(t, 60*time.Second, "hub namespace and member namespace removed", func() error {
		if err := hubC.Get(ctx, types.NamespacedName{Name: flv1.ClusterNamespace(name)}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("hub namespace: %v", err)
		}
		if _, err := member.CoreV1().Namespaces().Get(ctx, agent.SystemNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("member namespace: %v", err)
		}
		return nil
	})

	// The cluster can join again afterwards.
	ensureJoined(t, i)
}
