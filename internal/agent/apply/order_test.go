package apply

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func TestSort(t *testing.T) {
	objs := []*unstructured.Unstructured{
		obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "hook"),
		obj("apps/v1", "Deployment", "web"),
		obj("example.com/v1", "Widget", "w"),
		obj("v1", "Namespace", "shop"),
		obj("v1", "ConfigMap", "cfg"),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com"),
	}
	Sort(objs)
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if got, want := strings.Join(names, ","), "widgets.example.com,shop,web,w,cfg,hook"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}
