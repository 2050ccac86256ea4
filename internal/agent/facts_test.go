package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func node(ready bool, cpu, mem string) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return &corev1.Node{Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
}

func pod(nodeName string, phase corev1.PodPhase, cpus ...string) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: phase}}
	for _, c := range cpus {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(c)}}})
	}
	return p
}

func TestSummarize(t *testing.T) {
	nodes := []*corev1.Node{node(true, "4", "16Gi"), node(false, "8", "32Gi")}
	initPod := pod("n1", corev1.PodRunning, "100m")
	initPod.Spec.InitContainers = []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
	pods := []*corev1.Pod{
		pod("n1", corev1.PodRunning, "250m", "250m"), // 500m
		pod("n1", corev1.PodPending, "200m"),         // bound, not started: counts
		pod("", corev1.PodPending, "4"),              // unscheduled: does not hold resources
		pod("n1", corev1.PodSucceeded, "4"),          // finished: released
		pod("n2", corev1.PodFailed, "4"),
		initPod, // init container 1 > containers 100m: 1
	}
	ns, rs := summarize(nodes, pods)
	if ns.Total != 2 || ns.Ready != 1 {
		t.Errorf("nodes = %+v", ns)
	}
	check := func(what string, l corev1.ResourceList, name corev1.ResourceName, want string) {
		t.Helper()
		if got := l[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s %s = %s, want %s", what, name, got.String(), want)
		}
	}
	check("allocatable", rs.Allocatable, corev1.ResourceCPU, "12")
	check("capacity", rs.Capacity, corev1.ResourceMemory, "48Gi")
	check("requested", rs.Requested, corev1.ResourceCPU, "1700m")
	check("requested", rs.Requested, corev1.ResourcePods, "3")
}
