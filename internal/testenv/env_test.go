package testenv

import (
	"context"
	"testing"
	"time"

	"flotilla.dev/flotilla/internal/proc"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestStartHubAndMembers proves the substrate: API servers answer, member nodes carry the
// advertised allocatable, a pod is scheduled and becomes Ready, and Stop leaves no process.
func TestStartHubAndMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	env, err := Start(ctx, Options{Members: 2, NodesPerMember: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hub + 2 members ready in %s", time.Since(start).Round(time.Millisecond))
	defer env.Stop()

	cs := kubernetes.NewForConfigOrDie(env.Members[0].Config)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 || !NodeReady(&nodes.Items[0]) || !NodeReady(&nodes.Items[1]) {
		t.Fatalf("want 2 ready nodes, got %+v", nodes.Items)
	}
	if got := nodes.Items[0].Status.Allocatable[corev1.ResourceCPU]; got.Cmp(NodeCPU) != 0 {
		t.Fatalf("allocatable cpu %s, want %s", got.String(), NodeCPU.String())
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/probe"}},
			AutomountServiceAccountToken: new(false)},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "probe", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod never became Ready: %+v", p.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Hub and members are separate stores in one etcd: the pod is not visible on the hub.
	hub := kubernetes.NewForConfigOrDie(env.Hub.Config)
	if _, err := hub.CoreV1().Pods("default").Get(ctx, "probe", metav1.GetOptions{}); err == nil {
		t.Fatal("member pod visible on the hub: etcd prefixes leak")
	}

	procs := env.AllProcesses()
	env.Stop()
	for _, p := range procs {
		if proc.Alive(p.Pid) {
			t.Errorf("%s (pid %d) still running after Stop", p.Name, p.Pid)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
