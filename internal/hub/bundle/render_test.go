package bundle

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/content"
	"flotilla.dev/flotilla/internal/render"
)

func objs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	o, err := render.ParseYAML([]byte(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web}
data: {cluster: "${cluster.name}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func cluster(name string, l map[string]string) *flv1.MemberCluster {
	return &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

func replicasRule(name, region string, n string) flv1.OverrideRule {
	return flv1.OverrideRule{Name: name,
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": region}},
		Target:          &flv1.ResourceSelector{Group: "apps", Kind: "Deployment", Name: "web"},
		JSONPatch:       []flv1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: &apiextensionsv1.JSON{Raw: []byte(n)}}}}
}

func TestRenderOncePerDistinctRuleSet(t *testing.T) {
	clusters := []*flv1.MemberCluster{
		cluster("a", map[string]string{"region": "eu"}), cluster("b", map[string]string{"region": "us"}),
		cluster("c", map[string]string{"region": "eu"}), cluster("d", map[string]string{"region": "ap"}),
	}
	rules := []flv1.OverrideRule{replicasRule("eu", "eu", "3"), replicasRule("us", "us", "5")}
	p, err := Render(objs(t), rules, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Variants) != 3 {
		t.Fatalf("variants = %d, want 3 (base, eu, us)", len(p.Variants))
	}
	if p.ByCluster["a"] != p.ByCluster["c"] {
		t.Error("a and c match the same rules but got different variants")
	}
	if p.ByCluster["d"].Content.Hash != p.Base.Hash {
		t.Error("d matches no rule: it should run the base content")
	}
	dec, err := content.Decode(p.ByCluster["a"].Content.Chunks, p.ByCluster["a"].Content.Hash)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range dec {
		if o.GetKind() == "Deployment" {
			if r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); r != 3 {
				t.Errorf("eu replicas = %d, want 3", r)
			}
		}
	}

	// The revision is named by its inputs: a cluster joining with new labels adds a variant
	// but keeps the revision; a changed rule makes a new one.
	p2, err := Render(objs(t), rules, append(clusters, cluster("e", map[string]string{"region": "us"})))
	if err != nil {
		t.Fatal(err)
	}
	if p2.Hash != p.Hash {
		t.Error("adding a cluster changed the revision")
	}
	p3, err := Render(objs(t), []flv1.OverrideRule{replicasRule("eu", "eu", "4"), rules[1]}, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if p3.Hash == p.Hash {
		t.Error("changing an override kept the revision")
	}
}

func TestRenderErrorsNameRuleAndCluster(t *testing.T) {
	missing := replicasRule("typo", "eu", "3")
	missing.Target.Name = "wbe"
	badPath := replicasRule("bad-path", "eu", "3")
	badPath.JSONPatch[0].Path = "/spec/nothing/here"
	noName := objs(t)
	noName[1].SetName("")
	dup := append(objs(t), objs(t)[0])
	eu := []*flv1.MemberCluster{cluster("eu-1", map[string]string{"region": "eu"})}
	for _, tc := range []struct {
		name   string
		objs   []*unstructured.Unstructured
		rules  []flv1.OverrideRule
		reason string
		want   []string
	}{
		{"patch aimed at nothing", objs(t), []flv1.OverrideRule{missing}, flv1.ReasonOverrideFailed, []string{`"typo"`, "matches no object", "eu-1", "nothing was sent"}},
		{"patch that does not apply", objs(t), []flv1.OverrideRule{badPath}, flv1.ReasonOverrideFailed, []string{`"bad-path"`, "eu-1"}},
		{"missing name", noName, nil, flv1.ReasonInvalidResource, []string{"resource 2", "ConfigMap", "no metadata.name"}},
		{"duplicate", dup, nil, flv1.ReasonInvalidResource, []string{"resource 3", "duplicates resource 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.objs, tc.rules, eu)
			var se *StallError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a StallError", err)
			}
			if se.Reason != tc.reason {
				t.Errorf("reason = %s, want %s", se.Reason, tc.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(se.Message, w) {
					t.Errorf("message %q lacks %q", se.Message, w)
				}
			}
		})
	}
}
