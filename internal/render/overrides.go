// Package render turns a Bundle's resources into what one member cluster must run: override
// rules (RFC 6902 JSON patches, strategic-merge or JSON merge patches) and the cluster
// variables. Overrides render once per distinct set of matching rules (RenderKey), on the
// hub; variables are substituted per cluster, cheaply, at the edge.
package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// OverrideError names the rule that failed, so a Bundle's Stalled condition can say which.
type OverrideError struct {
	Rule string
	Err  error
}

func (e *OverrideError) Error() string { return fmt.Sprintf("override rule %q: %v", e.Rule, e.Err) }
func (e *OverrideError) Unwrap() error { return e.Err }

// MatchingRules returns the indexes of the rules that apply to a cluster with these labels.
// Clusters with the same result render the same content: it is the render key.
func MatchingRules(rules []flv1.OverrideRule, clusterLabels map[string]string) ([]int, error) {
	var out []int
	for i, r := range rules {
		if r.ClusterSelector == nil {
			out = append(out, i)
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(r.ClusterSelector)
		if err != nil {
			return nil, &OverrideError{Rule: r.Name, Err: fmt.Errorf("clusterSelector: %w", err)}
		}
		if sel.Matches(labels.Set(clusterLabels)) {
			out = append(out, i)
		}
	}
	return out, nil
}

// RenderKey is a stable string for a set of matching rules.
func RenderKey(matching []int) string {
	parts := make([]string, len(matching))
	for i, m := range matching {
		parts[i] = strconv.Itoa(m)
	}
	return strings.Join(parts, ",")
}

// ApplyOverrides applies the rules at the given indexes, in order, to deep copies of objs.
// A rule whose target matches no object, or a patch that does not apply, is an error and
// nothing is returned: content is either fully rendered or not at all.
func ApplyOverrides(objs []*unstructured.Unstructured, rules []flv1.OverrideRule, matching []int) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	for _, ri := range matching {
		r := rules[ri]
		if len(r.JSONPatch) == 0 && r.MergePatch == nil {
			if r.HelmValues != nil {
				continue // applied to the chart's values before rendering, not to objects
			}
			return nil, &OverrideError{Rule: r.Name, Err: fmt.Errorf("has neither jsonPatch, mergePatch nor helmValues")}
		}
		if r.Target == nil {
			return nil, &OverrideError{Rule: r.Name, Err: fmt.Errorf("has a patch but no target")}
		}
		hit := 0
		for i, o := range out {
			if !targets(*r.Target, o) {
				continue
			}
			hit++
			patched, err := applyRule(r, o)
			if err != nil {
				return nil, &OverrideError{Rule: r.Name, Err: fmt.Errorf("%s %s: %w", o.GetKind(), objectName(o), err)}
			}
			out[i] = patched
		}
		if hit == 0 {
			return nil, &OverrideError{Rule: r.Name, Err: fmt.Errorf("target %s matches no object of the bundle%s", describe(*r.Target), groupHint(*r.Target, out))}
		}
	}
	return out, nil
}

func targets(s flv1.ResourceSelector, o *unstructured.Unstructured) bool {
	gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
	if err != nil {
		return false
	}
	return s.Kind == o.GetKind() && s.Group == gv.Group &&
		(s.Namespace == "" || s.Namespace == o.GetNamespace()) && (s.Name == "" || s.Name == o.GetName())
}

func applyRule(r flv1.OverrideRule, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	doc, err := json.Marshal(o.Object)
	if err != nil {
		return nil, err
	}
	if len(r.JSONPatch) > 0 {
		ops, err := json.Marshal(r.JSONPatch)
		if err != nil {
			return nil, err
		}
		p, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			return nil, fmt.Errorf("jsonPatch: %w", err)
		}
		if doc, err = p.Apply(doc); err != nil {
			return nil, fmt.Errorf("jsonPatch: %w", err)
		}
	}
	if r.MergePatch != nil {
		if doc, err = mergePatch(doc, r.MergePatch.Raw, o.GroupVersionKind()); err != nil {
			return nil, fmt.Errorf("mergePatch: %w", err)
		}
	}
	res := &unstructured.Unstructured{}
	if err := res.UnmarshalJSON(doc); err != nil {
		return nil, err
	}
	if res.GetKind() != o.GetKind() || res.GetName() != o.GetName() || res.GetNamespace() != o.GetNamespace() {
		return nil, fmt.Errorf("a patch may not change kind, name or namespace")
	}
	return res, nil
}

// mergePatch is strategic for the built-in kinds client-go knows (so containers merge by
// name), and RFC 7386 for everything else (custom resources have no patch strategy).
func mergePatch(doc, patch []byte, gvk schema.GroupVersionKind) ([]byte, error) {
	if typed, err := scheme.Scheme.New(gvk); err == nil {
		return strategicpatch.StrategicMergePatch(doc, patch, typed)
	}
	return jsonpatch.MergePatch(doc, patch)
}

// groupHint suggests the group when the target would match an object but for its group:
// "Deployment" without group "apps" is the most common slip.
func groupHint(s flv1.ResourceSelector, objs []*unstructured.Unstructured) string {
	for _, o := range objs {
		g := o.GroupVersionKind().Group
		if g != s.Group && o.GetKind() == s.Kind && (s.Name == "" || s.Name == o.GetName()) && (s.Namespace == "" || s.Namespace == o.GetNamespace()) {
			return fmt.Sprintf(" (a %s of group %q has that name: set target.group: %q)", o.GetKind(), g, g)
		}
	}
	return ""
}

func objectName(o *unstructured.Unstructured) string {
	if o.GetNamespace() != "" {
		return o.GetNamespace() + "/" + o.GetName()
	}
	return o.GetName()
}

func describe(s flv1.ResourceSelector) string {
	d := s.Kind
	if s.Group != "" {
		d += "." + s.Group
	}
	if s.Namespace != "" || s.Name != "" {
		d += " " + s.Namespace + "/" + s.Name
	}
	return d
}
