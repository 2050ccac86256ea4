package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func cm(name, ns string, data map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name}, "data": data}}
	if ns != "" {
		o.SetNamespace(ns)
	}
	return o
}

func TestDiffObjects(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "app"}}}
	tests := []struct {
		name          string
		running, want []*unstructured.Unstructured
		removeDropped bool
		changes       map[string]string // key -> change
		diffHas       map[string]string // key -> a line the diff must hold
		summaryHas    string
	}{
		{name: "nothing runs yet: everything is created",
			want:    []*unstructured.Unstructured{ns, cm("cfg", "", map[string]any{"a": "1"})},
			changes: map[string]string{"Namespace app": changeCreate, "ConfigMap app/cfg": changeCreate},
			diffHas: map[string]string{"ConfigMap app/cfg": "+  a: \"1\""}, summaryHas: "2 to create, 0 to change, 0 to delete"},
		{name: "a changed value, an unchanged object; the target namespace matches an explicit one",
			running: []*unstructured.Unstructured{ns, cm("cfg", "", map[string]any{"a": "1"})},
			want:    []*unstructured.Unstructured{ns, cm("cfg", "app", map[string]any{"a": "2"})},
			changes: map[string]string{"Namespace app": changeUnchanged, "ConfigMap app/cfg": changeUpdate},
			diffHas: map[string]string{"ConfigMap app/cfg": "-  a: \"1\""}, summaryHas: "1 to change, 0 to delete, 1 unchanged"},
		{name: "a dropped object is deleted when pruning",
			running: []*unstructured.Unstructured{cm("old", "", nil), cm("cfg", "", nil)},
			want:    []*unstructured.Unstructured{cm("cfg", "", nil)}, removeDropped: true,
			changes: map[string]string{"ConfigMap app/old": changeDelete, "ConfigMap app/cfg": changeUnchanged},
			diffHas: map[string]string{"ConfigMap app/old": "-kind: ConfigMap"}, summaryHas: "1 to delete"},
		{name: "a dropped object stays without pruning, and shows no diff",
			running: []*unstructured.Unstructured{cm("old", "", nil)},
			changes: map[string]string{"ConfigMap app/old": changeOrphan}, summaryHas: "1 dropped but left in place"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := diffObjects(tc.running, tc.want, "app", "running", "desired", tc.removeDropped)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]objectChange{}
			for _, c := range got {
				seen[c.Key] = c
			}
			if len(seen) != len(tc.changes) {
				t.Errorf("changes = %+v, want %v", got, tc.changes)
			}
			for k, want := range tc.changes {
				c, ok := seen[k]
				if !ok || c.Change != want {
					t.Errorf("%s: change %q, want %q (all: %+v)", k, c.Change, want, got)
				}
				if (want == changeUnchanged || want == changeOrphan) && c.Diff != "" {
					t.Errorf("%s: %s object has a diff:\n%s", k, want, c.Diff)
				}
			}
			for k, line := range tc.diffHas {
				if d := seen[k].Diff; !strings.Contains(d, line) || !strings.Contains(d, "--- running") || !strings.Contains(d, "+++ desired") {
					t.Errorf("%s: diff lacks %q:\n%s", k, line, d)
				}
			}
			if s := summarizeChanges(got); !strings.Contains(s, tc.summaryHas) {
				t.Errorf("summary %q lacks %q", s, tc.summaryHas)
			}
		})
	}
}
