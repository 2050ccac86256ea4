package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"flotilla.dev/flotilla/internal/agent"
)

// TestJoinInstallsAgentDeployment: without --local, join installs the agent as a Deployment
// running as its own ServiceAccount with the given image, and unjoin removes it all. (kwok
// only simulates containers, so the agent in it cannot run here; --wait=0 skips waiting.)
func TestJoinInstallsAgentDeployment(t *testing.T) {
	ctx := context.Background()
	const i = 4
	m := env.Members[i]
	mustFlotilla(t, "join", m.Name, "--member-kubeconfig", m.Kubeconfig, "--wait", "0",
		"--image", "registry.example/flotilla:test", "--agent-arg=--heartbeat-interval=3s")
	cs := memberClient(t, i)
	dep, err := cs.AppsV1().Deployments(agent.SystemNamespace).Get(ctx, "flotilla-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	if spec.ServiceAccountName != "flotilla-agent" || spec.Containers[0].Image != "registry.example/flotilla:test" {
		t.Errorf("deployment: sa=%q image=%q", spec.ServiceAccountName, spec.Containers[0].Image)
	}
	if args := spec.Containers[0].Args; len(args) == 0 || args[0] != "agent" || !slices.Contains(args, "--heartbeat-interval=3s") {
		t.Errorf("agent args = %v", args)
	}
	if c := spec.Containers[0].SecurityContext; c == nil || c.RunAsNonRoot == nil || !*c.RunAsNonRoot {
		t.Errorf("agent container must run as non-root: %+v", c)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "flotilla-agent", metav1.GetOptions{}); err != nil {
		t.Errorf("agent ClusterRoleBinding: %v", err)
	}
	out := mustFlotilla(t, "unjoin", m.Name, "--member-kubeconfig", m.Kubeconfig)
	if !strings.Contains(out, "left the fleet") {
		t.Errorf("unjoin output:\n%s", out)
	}
	if _, err := cs.AppsV1().Deployments(agent.SystemNamespace).Get(ctx, "flotilla-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("agent Deployment after unjoin: %v", err)
	}
}
