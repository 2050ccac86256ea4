package placement

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func cluster(name string, labels map[string]string, taints ...flv1.Taint) flv1.MemberCluster {
	return flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: flv1.MemberClusterSpec{Accepted: true, Taints: taints}}
}

func TestSelect(t *testing.T) {
	maintenance := flv1.Taint{Key: "maintenance", Effect: flv1.TaintNoSchedule}
	now := metav1.Now()
	leaving := cluster("leaving", map[string]string{"env": "prod"})
	leaving.DeletionTimestamp = &now
	pending := cluster("pending", map[string]string{"env": "prod"})
	pending.Spec.Accepted = false
	fleet := []flv1.MemberCluster{
		cluster("dev-1", map[string]string{"env": "dev", "region": "eu"}),
		cluster("prod-eu", map[string]string{"env": "prod", "region": "eu"}),
		cluster("prod-us", map[string]string{"env": "prod", "region": "us"}),
		cluster("prod-ap", map[string]string{"env": "prod", "region": "ap"}, maintenance),
		leaving, pending,
	}
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	tests := []struct {
		name string
		p    flv1.Placement
		want Result
	}{
		{"empty placement selects nothing", flv1.Placement{}, Result{}},
		{"{} selects every eligible cluster", flv1.Placement{ClusterSelector: &metav1.LabelSelector{}},
			Result{Selected: []string{"dev-1", "prod-eu", "prod-us"}, Tainted: []string{"prod-ap"}, NotAccepted: []string{"leaving", "pending"}}},
		{"matchLabels", flv1.Placement{ClusterSelector: prod},
			Result{Selected: []string{"prod-eu", "prod-us"}, Tainted: []string{"prod-ap"}, NotAccepted: []string{"leaving", "pending"}}},
		{"matchExpressions", flv1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu", "ap"}}}}},
			Result{Selected: []string{"dev-1", "prod-eu"}, Tainted: []string{"prod-ap"}}},
		{"names add to the selector, unknown names reported", flv1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}},
			ClusterNames: []string{"dev-1", "ghost"}},
			Result{Selected: []string{"dev-1", "prod-us"}, Missing: []string{"ghost"}}},
		{"exclusions win", flv1.Placement{ClusterSelector: prod, ExcludeClusterNames: []string{"prod-us"},
			ExcludeClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "ap"}}},
			Result{Selected: []string{"prod-eu"}, NotAccepted: []string{"leaving", "pending"}}},
		{"toleration lets a tainted cluster in", flv1.Placement{ClusterSelector: prod,
			Tolerations: []flv1.Toleration{{Key: "maintenance", Operator: flv1.TolerationOpExists}}},
			Result{Selected: []string{"prod-ap", "prod-eu", "prod-us"}, NotAccepted: []string{"leaving", "pending"}}},
		{"toleration with the wrong value does not", flv1.Placement{ClusterSelector: prod,
			Tolerations: []flv1.Toleration{{Key: "maintenance", Value: "yes"}}},
			Result{Selected: []string{"prod-eu", "prod-us"}, Tainted: []string{"prod-ap"}, NotAccepted: []string{"leaving", "pending"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.p, fleet)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	_, err := Select(flv1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "env", Operator: "Near"}}}}, fleet)
	if err == nil || !strings.Contains(err.Error(), "clusterSelector") {
		t.Fatalf("invalid selector: %v", err)
	}
}

func TestTolerates(t *testing.T) {
	taint := flv1.Taint{Key: "maintenance", Value: "kernel", Effect: flv1.TaintNoSchedule}
	for _, tt := range []struct {
		name string
		tol  []flv1.Toleration
		want bool
	}{
		{"none", nil, false},
		{"exists by key", []flv1.Toleration{{Key: "maintenance", Operator: flv1.TolerationOpExists}}, true},
		{"exists for all keys", []flv1.Toleration{{Operator: flv1.TolerationOpExists}}, true},
		{"equal value", []flv1.Toleration{{Key: "maintenance", Value: "kernel"}}, true},
		{"equal other value", []flv1.Toleration{{Key: "maintenance", Value: "disk"}}, false},
		{"matching effect", []flv1.Toleration{{Key: "maintenance", Operator: flv1.TolerationOpExists, Effect: flv1.TaintNoSchedule}}, true},
		{"other key", []flv1.Toleration{{Key: "gpu", Operator: flv1.TolerationOpExists}}, false},
	} {
		if got := Tolerates(tt.tol, []flv1.Taint{taint}); got != tt.want {
			t.Errorf("%s: Tolerates = %v, want %v", tt.name, got, tt.want)
		}
	}
	if !Tolerates(nil, nil) {
		t.Error("no taints: everything tolerated")
	}
}
