package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub/membercluster"
)

// TestHubRestoresDeletedIdentity: deleting the agent's Role on the hub by hand is undone.
func TestHubRestoresDeletedIdentity(t *testing.T) {
	ctx := context.Background()
	name := ensureJoined(t, 2)
	ns := flv1.ClusterNamespace(name)
	role := &rbacv1.Role{}
	key := types.NamespacedName{Namespace: ns, Name: membercluster.AgentRoleName}
	if err := hubC.Get(ctx, key, role); err != nil {
		t.Fatal(err)
	}
	oldUID := role.UID
	if err := hubC.Delete(ctx, role); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "Role recreated", func() error {
		r := &rbacv1.Role{}
		if err := hubC.Get(ctx, key, r); err != nil {
			return err
		}
		if r.UID == oldUID {
			return fmt.Errorf("still the old Role")
		}
		return nil
	})
}

// TestNodeChangeReportedPromptly: a node added to a member shows in its facts within
// seconds, long before the agent's periodic report (set to 10 minutes here).
func TestNodeChangeReportedPromptly(t *testing.T) {
	ctx := context.Background()
	const i = 4
	m := env.Members[i]
	name := m.Name
	mustFlotilla(t, "join", name, "--member-kubeconfig", m.Kubeconfig, "--local", "--labels", memberLabels(i),
		"--agent-arg=--heartbeat-interval=1s", "--agent-arg=--report-interval=10m")
	t.Cleanup(func() { _, _ = flotilla(t, "unjoin", name) })
	cs := memberClient(t, i)
	cpu := resource.MustParse("8")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "extra-node", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("10")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("10")},
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cs.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{})
	eventually(t, 15*time.Second, "third node and its CPU reported", func() error {
		mc := &flv1.MemberCluster{}
		if err := hubC.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			return err
		}
		got := mc.Status.Resources.Allocatable[corev1.ResourceCPU]
		if mc.Status.Nodes.Total != 3 || mc.Status.Nodes.Ready != 3 || got.Cmp(resource.MustParse("40")) != 0 {
			return fmt.Errorf("nodes %+v, allocatable cpu %s", *mc.Status.Nodes, got.String())
		}
		return nil
	})
}
