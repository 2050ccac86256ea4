package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// ensureHubNamespace creates a team namespace on the hub.
func ensureHubNamespace(t *testing.T, name string) {
	t.Helper()
	err := hubC.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// raw turns Go values into a Bundle's inline resources.
func rawObjects(t *testing.T, objs ...map[string]any) []runtime.RawExtension {
	t.Helper()
	out := make([]runtime.RawExtension, len(objs))
	for i, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = runtime.RawExtension{Raw: b}
	}
	return out
}

func deployment(name string, replicas int, image string) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": replicas, "progressDeadlineSeconds": 15,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}},
			},
		},
	}
}

func getBundle(t *testing.T, ns, name string) *flv1.Bundle {
	t.Helper()
	b := &flv1.Bundle{}
	if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// waitBundle waits until the Bundle's status satisfies ok, and returns it.
func waitBundle(t *testing.T, ns, name string, timeout time.Duration, what string, ok func(*flv1.Bundle) error) *flv1.Bundle {
	t.Helper()
	var b *flv1.Bundle
	eventually(t, timeout, what, func() error {
		b = &flv1.Bundle{}
		if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
			return err
		}
		if b.Status.ObservedGeneration != b.Generation {
			return fmt.Errorf("status is of generation %d, bundle is at %d", b.Status.ObservedGeneration, b.Generation)
		}
		if err := ok(b); err != nil {
			return fmt.Errorf("%w (conditions: %s)", err, conditionsText(b.Status.Conditions))
		}
		return nil
	})
	return b
}

func conditionsText(conds []metav1.Condition) string {
	s := ""
	for _, c := range conds {
		s += fmt.Sprintf("[%s=%s %s: %s] ", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

func bundleReady(targeted int32) func(*flv1.Bundle) error {
	return func(b *flv1.Bundle) error {
		if !meta.IsStatusConditionTrue(b.Status.Conditions, flv1.ConditionReady) || b.Status.Targeted != targeted || b.Status.Available != targeted {
			return fmt.Errorf("targeted %d, available %d; want %d ready", b.Status.Targeted, b.Status.Available, targeted)
		}
		return nil
	}
}

func TestBundleReachesClustersBySelectorWithOverridesAndVariables(t *testing.T) {
	for _, i := range []int{0, 1, 2, 3} {
		ensureJoined(t, i)
	}
	ctx := context.Background()
	ensureHubNamespace(t, "team-web")
	b := &flv1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-web"},
		Spec: flv1.BundleSpec{
			TargetNamespace: "web",
			Source: flv1.BundleSource{Inline: &flv1.InlineSource{Resources: rawObjects(t,
				map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web-config"},
					"data": map[string]any{"cluster": "${cluster.name}", "region": "${cluster.labels.region}", "owner": "${cluster.owner}", "literal": "$${cluster.name}"}},
				deployment("web", 1, "nginx:1.27"),
			)}},
			// staging and prod: members 1, 2, 3; member 0 (dev) is not placed.
			Placement: flv1.Placement{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"staging", "prod"}}}}},
			Overrides: []flv1.OverrideRule{{
				Name:            "eu-replicas",
				ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu-west"}},
				Target:          &flv1.ResourceSelector{Group: "apps", Kind: "Deployment", Name: "web"},
				JSONPatch:       []flv1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: jsonValue(t, 3)}},
			}},
		},
	}
	if err := hubC.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := waitBundle(t, "team-web", "web", 90*time.Second, "bundle web available on 3 clusters", bundleReady(3))
	t.Logf("bundle web available on 3 clusters %s after create; revision %s, %d variants", time.Since(start).Round(time.Millisecond), got.Status.Revision, got.Status.Variants)
	if got.Status.Variants != 2 {
		t.Errorf("variants = %d, want 2 (base and eu-replicas)", got.Status.Variants)
	}

	for _, i := range []int{1, 2, 3} {
		cs := memberClient(t, i)
		cm, err := cs.CoreV1().ConfigMaps("web").Get(ctx, "web-config", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		m := env.Members[i]
		want := map[string]string{"cluster": m.Name, "owner": "team-" + m.Name, "literal": "${cluster.name}"}
		for k, v := range want {
			if cm.Data[k] != v {
				t.Errorf("member %d: ConfigMap data[%s] = %q, want %q", i, k, cm.Data[k], v)
			}
		}
		if cm.Data["region"] == "" || cm.Data["region"] == "${cluster.labels.region}" {
			t.Errorf("member %d: region not substituted: %q", i, cm.Data["region"])
		}
		d, err := cs.AppsV1().Deployments("web").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		wantReplicas := int32(1)
		if i == 2 { // prod, eu-west
			wantReplicas = 3
		}
		if *d.Spec.Replicas != wantReplicas {
			t.Errorf("member %d: replicas = %d, want %d", i, *d.Spec.Replicas, wantReplicas)
		}
		if d.Status.ReadyReplicas != wantReplicas {
			t.Errorf("member %d: ready replicas = %d, want %d", i, d.Status.ReadyReplicas, wantReplicas)
		}
	}
	if _, err := memberClient(t, 0).AppsV1().Deployments("web").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member 0 (dev) is not placed but has the Deployment (err %v)", err)
	}
}

func jsonValue(t *testing.T, v any) *apiextensionsv1.JSON {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}
