package apply

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"flotilla.dev/flotilla/internal/render"
	"flotilla.dev/flotilla/internal/testenv"
)

var member *testenv.Cluster

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	env, err := testenv.Start(ctx, testenv.Options{Members: 1})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	member = env.Members[0]
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

func parse(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render.ParseYAML([]byte(docs))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

const web = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "example.invalid/web:1"}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: small}`

func mustApply(t *testing.T, a *Applier, objs []*unstructured.Unstructured, o Options) []Ref {
	t.Helper()
	var refs []Ref
	for _, r := range a.Apply(context.Background(), objs, o) {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Ref, r.Err)
		}
		refs = append(refs, r.Ref)
	}
	return refs
}

// TestApplyHealthPrune: a Deployment, a ConfigMap, a CRD and a resource of that CRD reach
// a real member in one apply (namespace created on the way), the Deployment becomes Current
// once kwok runs its pods, and dropping objects prunes them, with the inventory kept on the
// member.
func TestApplyHealthPrune(t *testing.T) {
	ctx := context.Background()
	a, err := New(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(member.Config)
	inv := &Inventory{Client: cs, Namespace: "default"}
	objs := parse(t, web)
	refs := mustApply(t, a, objs, Options{DefaultNamespace: "shop"})
	if refs[0].Kind != "CustomResourceDefinition" {
		t.Errorf("CRD not applied first: %v", refs)
	}
	if err := inv.Save(ctx, "web", refs); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var notCurrent []string
		for _, h := range a.Health(ctx, refs) {
			if h.Err != nil || h.Health != status.CurrentStatus {
				notCurrent = append(notCurrent, fmt.Sprintf("%s=%s %v %s", h.Ref, h.Health, h.Err, h.Message))
			}
		}
		if len(notCurrent) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Current: %v", notCurrent)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Current means kwok really ran the pods.
	if d, err := cs.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{}); err != nil || d.Status.AvailableReplicas != 2 {
		t.Fatalf("Deployment Current but available replicas = %v (%v)", d.Status.AvailableReplicas, err)
	}

	// The next revision drops the ConfigMap and the Widget.
	next := parse(t, web)[:1]
	nextRefs := mustApply(t, a, next, Options{DefaultNamespace: "shop"})
	prev, err := inv.Load(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range a.Prune(ctx, prev, nextRefs) {
		if r.Err != nil {
			t.Fatalf("prune %s: %v", r.Ref, r.Err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("shop").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap not pruned: %v", err)
	}
	if _, err := cs.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment pruned by mistake: %v", err)
	}
}

// TestConflictIsPerObject: a field another manager owns is a conflict for that object only;
// with takeover the bundle's value wins.
func TestConflictIsPerObject(t *testing.T) {
	ctx := context.Background()
	a, err := New(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(member.Config)
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "contested", Namespace: "default"}, Data: map[string]string{"color": "red"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, other, metav1.CreateOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	objs := parse(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: contested, namespace: default}
data: {color: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: uncontested, namespace: default}
data: {color: blue}`)
	res := a.Apply(ctx, objs, Options{})
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "takeover") {
		t.Errorf("contested: want a conflict naming takeover, got %v", res[0].Err)
	}
	if res[1].Err != nil {
		t.Errorf("uncontested failed with its neighbour: %v", res[1].Err)
	}
	mustApply(t, a, objs, Options{Takeover: true})
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "contested", metav1.GetOptions{})
	if err != nil || cm.Data["color"] != "blue" {
		t.Fatalf("after takeover: %v %v", cm.Data, err)
	}
}

// TestBadObjectsAreClearErrors: an unknown kind, a missing name and a namespaced object
// without any namespace fail alone and say why.
func TestBadObjectsAreClearErrors(t *testing.T) {
	a, err := New(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	objs := parse(t, `
apiVersion: nope.example.com/v1
kind: Gadget
metadata: {name: g}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: nowhere}`)
	want := []string{"does not serve", "without metadata.name", "names no namespace"}
	res := a.Apply(context.Background(), objs, Options{})
	for i, w := range want {
		if res[i].Err == nil || !strings.Contains(res[i].Err.Error(), w) {
			t.Errorf("object %d: want an error with %q, got %v", i, w, res[i].Err)
		}
	}
}
