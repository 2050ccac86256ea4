package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func TestFormatQuantities(t *testing.T) {
	for _, tt := range []struct{ in, cpu, mem string }{
		{"16", "16", "16"},
		{"250m", "0.25", "1"},
		{"64Gi", "68719476736", "64Gi"},
		{"1536Mi", "1610612736", "1.5Gi"},
		{"512Mi", "536870912", "512Mi"},
	} {
		q := resource.MustParse(tt.in)
		if got := formatCPU(q); got != tt.cpu {
			t.Errorf("formatCPU(%s) = %s, want %s", tt.in, got, tt.cpu)
		}
		if got := formatMemory(q); got != tt.mem {
			t.Errorf("formatMemory(%s) = %s, want %s", tt.in, got, tt.mem)
		}
	}
}

func TestPrintClusterTable(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	mc := flv1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-eu-1", Labels: map[string]string{"env": "prod"}},
		Spec:       flv1.MemberClusterSpec{Owner: "payments"},
		Status: flv1.MemberClusterStatus{
			Conditions: []metav1.Condition{{Type: flv1.ConditionReady, Status: metav1.ConditionFalse, Reason: flv1.ReasonUnreachable, Message: "no heartbeat"}},
			ClusterFacts: flv1.ClusterFacts{
				KubernetesVersion: "v1.37.2",
				Nodes:             &flv1.NodeSummary{Total: 3, Ready: 2},
				Resources: &flv1.ResourceSummary{
					Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48"), corev1.ResourceMemory: resource.MustParse("192Gi")},
					Requested:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
				},
			},
		},
	}
	var b bytes.Buffer
	if err := printClusterTable(&b, []flv1.MemberCluster{mc}, map[string]time.Time{"prod-eu-1": now.Add(-75 * time.Second)}, true, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"NAME", "LAST SEEN", "prod-eu-1", "Unreachable", "v1.37.2", "2/3", "48 / 1.5", "192Gi / 2Gi", "payments", "1m15s ago", "env=prod", "no heartbeat"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
