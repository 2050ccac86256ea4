package render

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

const bundleYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: web, image: "web:1", env: [{name: REGION, value: "${cluster.labels.region}"}]}
      - {name: sidecar, image: "proxy:1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data:
  cluster: "${cluster.name}"
  owner: "${cluster.owner}"
  script: "echo ${HOME} $${cluster.name}"
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop}
spec: {size: small, tags: [a, b]}
`

func objects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ParseYAML([]byte(bundleYAML))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func raw(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

var deployment = &flv1.ResourceSelector{Group: "apps", Kind: "Deployment", Name: "web"}

func TestApplyOverrides(t *testing.T) {
	eu := &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
	tests := []struct {
		name    string
		rules   []flv1.OverrideRule
		check   func(t *testing.T, objs []*unstructured.Unstructured)
		wantErr string
	}{
		{"json patch replaces replicas", []flv1.OverrideRule{{Name: "eu-replicas", ClusterSelector: eu, Target: deployment,
			JSONPatch: []flv1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: raw("5")}}}},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				if r, _, _ := unstructured.NestedInt64(objs[0].Object, "spec", "replicas"); r != 5 {
					t.Errorf("replicas = %d", r)
				}
			}, ""},
		{"strategic merge keeps the other container", []flv1.OverrideRule{{Name: "image", Target: deployment,
			MergePatch: raw(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:2"}]}}}}`)}},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				cs, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
				if len(cs) != 2 || cs[0].(map[string]any)["image"] != "web:2" || cs[1].(map[string]any)["image"] != "proxy:1" {
					t.Errorf("containers = %v", cs)
				}
			}, ""},
		{"JSON merge patch on a custom kind replaces lists", []flv1.OverrideRule{{Name: "widget",
			Target: &flv1.ResourceSelector{Group: "example.com", Kind: "Widget"}, MergePatch: raw(`{"spec":{"size":"large","tags":["c"]}}`)}},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				size, _, _ := unstructured.NestedString(objs[2].Object, "spec", "size")
				tags, _, _ := unstructured.NestedStringSlice(objs[2].Object, "spec", "tags")
				if size != "large" || len(tags) != 1 || tags[0] != "c" {
					t.Errorf("widget spec size=%s tags=%v", size, tags)
				}
			}, ""},
		{"rules apply in order", []flv1.OverrideRule{
			{Name: "a", Target: deployment, JSONPatch: []flv1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: raw("3")}}},
			{Name: "b", Target: deployment, JSONPatch: []flv1.JSONPatchOperation{{Op: "test", Path: "/spec/replicas", Value: raw("3")},
				{Op: "replace", Path: "/spec/replicas", Value: raw("4")}}}},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				if r, _, _ := unstructured.NestedInt64(objs[0].Object, "spec", "replicas"); r != 4 {
					t.Errorf("replicas = %d", r)
				}
			}, ""},
		{"target matching nothing", []flv1.OverrideRule{{Name: "typo", Target: &flv1.ResourceSelector{Group: "apps", Kind: "Deployment", Name: "wbe"},
			JSONPatch: []flv1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: raw("1")}}}}, nil,
			`override rule "typo": target Deployment.apps /wbe matches no object`},
		{"group must match too", []flv1.OverrideRule{{Name: "core", Target: &flv1.ResourceSelector{Kind: "Deployment"},
			JSONPatch: []flv1.JSONPatchOperation{{Op: "remove", Path: "/spec"}}}}, nil, `matches no object of the bundle (a Deployment of group "apps" has that name: set target.group: "apps")`},
		{"patch that does not apply", []flv1.OverrideRule{{Name: "bad-path", Target: deployment,
			JSONPatch: []flv1.JSONPatchOperation{{Op: "replace", Path: "/spec/nope/x", Value: raw("1")}}}}, nil,
			`override rule "bad-path": Deployment shop/web: jsonPatch`},
		{"failing test op", []flv1.OverrideRule{{Name: "guard", Target: deployment,
			JSONPatch: []flv1.JSONPatchOperation{{Op: "test", Path: "/spec/replicas", Value: raw("9")}}}}, nil, `"guard"`},
		{"renaming is refused", []flv1.OverrideRule{{Name: "rename", Target: deployment,
			MergePatch: raw(`{"metadata":{"name":"other"}}`)}}, nil, "may not change kind, name or namespace"},
		{"empty rule", []flv1.OverrideRule{{Name: "empty", Target: deployment}}, nil, "neither jsonPatch, mergePatch nor helmValues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := objects(t)
			all := make([]int, len(tt.rules))
			for i := range all {
				all[i] = i
			}
			out, err := ApplyOverrides(in, tt.rules, all)
			if tt.wantErr != "" {
				var oe *OverrideError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &oe) {
					t.Fatalf("err = %v, want an OverrideError containing %q", err, tt.wantErr)
				}
				if out != nil {
					t.Fatal("partial output on error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, out)
			if r, _, _ := unstructured.NestedInt64(in[0].Object, "spec", "replicas"); r != 2 {
				t.Errorf("input modified: replicas = %d", r)
			}
		})
	}
}

func TestMatchingRulesAndRenderKey(t *testing.T) {
	rules := []flv1.OverrideRule{
		{Name: "all"},
		{Name: "eu", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
		{Name: "prod", ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}}},
	}
	for _, tt := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"region": "eu", "env": "prod"}, "0,1,2"},
		{map[string]string{"region": "us", "env": "prod"}, "0,2"},
		{map[string]string{"region": "eu", "env": "dev"}, "0,1"},
		{nil, "0"},
	} {
		m, err := MatchingRules(rules, tt.labels)
		if err != nil {
			t.Fatal(err)
		}
		if got := RenderKey(m); got != tt.want {
			t.Errorf("labels %v: key %q, want %q", tt.labels, got, tt.want)
		}
	}
}

func TestSubstitute(t *testing.T) {
	objs := objects(t)
	v := Vars{Name: "prod-eu-1", Owner: "team-payments", Labels: map[string]string{"region": "eu-west"}}
	if err := Substitute(objs, v); err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(objs[1].Object, "data")
	if data["cluster"] != "prod-eu-1" || data["owner"] != "team-payments" || data["script"] != "echo ${HOME} ${cluster.name}" {
		t.Errorf("configmap data = %v", data)
	}
	cs, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
	env := cs[0].(map[string]any)["env"].([]any)[0].(map[string]any)
	if env["value"] != "eu-west" {
		t.Errorf("env = %v", env)
	}

	for _, tt := range []struct{ in, wantErr string }{
		{"${cluster.labels.tier}", `has no label "tier"`},
		{"${cluster.region}", "unknown variable ${cluster.region}"},
	} {
		if _, err := SubstituteString(tt.in, v); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("SubstituteString(%q) = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
	if s, err := SubstituteString("plain ${x}", v); err != nil || s != "plain ${x}" {
		t.Errorf("unrelated ${x}: %q %v", s, err)
	}
}
