package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// summarize computes the facts the agent reports from the member's nodes and pods:
// node counts, capacity and allocatable summed over nodes, and the requests of every pod
// that holds a node's resources (bound and not finished) plus their count.
func summarize(nodes []*corev1.Node, pods []*corev1.Pod) (flv1.NodeSummary, flv1.ResourceSummary) {
	var ns flv1.NodeSummary
	rs := flv1.ResourceSummary{Capacity: corev1.ResourceList{}, Allocatable: corev1.ResourceList{}, Requested: corev1.ResourceList{}}
	for _, n := range nodes {
		ns.Total++
		if nodeReady(n) {
			ns.Ready++
		}
		addTo(rs.Capacity, n.Status.Capacity)
		addTo(rs.Allocatable, n.Status.Allocatable)
	}
	var podCount int64
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		podCount++
		addTo(rs.Requested, podRequests(p))
	}
	rs.Requested[corev1.ResourcePods] = *resource.NewQuantity(podCount, resource.DecimalSI)
	return ns, rs
}

// podRequests follows the scheduler: the sum over containers, or the largest init container
// when that is bigger, plus pod overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addTo(sum, c.Resources.Requests)
	}
	for _, c := range p.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
				sum[name] = q.DeepCopy()
			}
		}
	}
	addTo(sum, p.Spec.Overhead)
	return sum
}

func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourcePods &&
			name != corev1.ResourceEphemeralStorage {
			continue
		}
		cur := dst[name]
		cur.Add(q)
		dst[name] = cur
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
