package bundle

import (
	"strings"
	"testing"
)

// fleetRepo is a recommended fleet layout: a shared base, a component, per-group overlays.
var fleetRepo = map[string][]byte{
	"base/kustomization.yaml": []byte("resources: [deploy.yaml, cm.yaml]\n"),
	"base/deploy.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
`),
	"base/cm.yaml":                        []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {level: info}\n"),
	"components/debug/kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: web}\n    data: {level: debug}\n"),
	"overlays/prod/kustomization.yaml":    []byte("resources: [../../base]\nnamePrefix: prod-\nreplicas: [{name: web, count: 3}]\n"),
	"overlays/dev/kustomization.yaml":     []byte("resources: [../../base]\ncomponents: [../../components/debug]\n"),
	"overlays/broken/kustomization.yaml":  []byte("resources: [../../nope]\n"),
	"plain/a.yaml":                        []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"),
	"plain/sub/c.json":                    []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`),
	"plain/README.md":                     []byte("not a manifest"),
	"bad/x.yaml":                          []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n"),
}

func TestObjectsAt(t *testing.T) {
	tests := []struct {
		dir   string
		want  string // kind/name list, in order
		check func(t *testing.T, got map[string]map[string]any)
		err   string
	}{
		{dir: "plain", want: "ConfigMap/a ConfigMap/b ConfigMap/c"},
		{dir: "overlays/prod", want: "Deployment/prod-web ConfigMap/prod-web", check: func(t *testing.T, got map[string]map[string]any) {
			if r := got["Deployment/prod-web"]["spec"].(map[string]any)["replicas"]; r != int64(3) {
				t.Errorf("replicas %v", r)
			}
		}},
		{dir: "overlays/dev", want: "Deployment/web ConfigMap/web", check: func(t *testing.T, got map[string]map[string]any) {
			if l := got["ConfigMap/web"]["data"].(map[string]any)["level"]; l != "debug" {
				t.Errorf("the component did not apply: level %v", l)
			}
		}},
		{dir: "overlays/broken", err: "KustomizeFailed"},
		{dir: "bad", err: "bad/x.yaml"},
		{dir: "components/none", err: `no .yaml, .yml or .json file below "components/none"`},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			objs, err := objectsAt(fleetRepo, tc.dir, "fleet@abc")
			if tc.err != "" {
				se, ok := err.(*StallError)
				if !ok || !strings.Contains(se.Reason+": "+se.Message, tc.err) || !strings.Contains(se.Message, "fleet@abc") {
					t.Fatalf("error %v, want a StallError containing %q and the commit", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			got := map[string]map[string]any{}
			for _, o := range objs {
				k := o.GetKind() + "/" + o.GetName()
				names = append(names, k)
				got[k] = o.Object
			}
			if strings.Join(names, " ") != tc.want {
				t.Errorf("objects %v, want %s", names, tc.want)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}
