package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/content"
	"flotilla.dev/flotilla/internal/render"
)

// StallError is an error in the Bundle as written: retrying does not help, the user must
// change something. Its Reason becomes the Stalled condition's reason.
type StallError struct {
	Reason  string
	Message string
}

func (e *StallError) Error() string { return e.Message }

func stall(reason, format string, args ...any) *StallError {
	return &StallError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Variant is one rendering: the content for every cluster matching the same override rules.
type Variant struct {
	Rules    []string
	Content  *content.Encoded
	Clusters []string
}

// Plan is a rendered revision: its identity, base content, the variants the placed clusters
// need, and which cluster runs which.
type Plan struct {
	// Hash identifies the revision by its inputs (base content and overrides), not by which
	// variants the current placement happens to need: a cluster joining with new labels adds
	// a variant to the same revision instead of making a new one.
	Hash     string
	Base     *content.Encoded
	Variants []*Variant
	// ByCluster maps each placed cluster to its variant.
	ByCluster map[string]*Variant
	// SourceRevision is where the objects came from ("<ref>@<commit>"; empty for inline).
	SourceRevision string
}

// validate checks what the hub can check without a member: every object has apiVersion,
// kind and name, and no object appears twice. Whether a member serves the kind is the
// agent's to say.
func validate(objs []*unstructured.Unstructured) error {
	seen := map[string]int{}
	for i, o := range objs {
		what := fmt.Sprintf("resource %d", i+1)
		if o.GetName() != "" {
			what += fmt.Sprintf(" (%s %s)", o.GetKind(), o.GetName())
		}
		if o.GetAPIVersion() == "" || o.GetKind() == "" {
			return stall(flv1.ReasonInvalidResource, "%s has no apiVersion or kind", what)
		}
		if _, err := schema.ParseGroupVersion(o.GetAPIVersion()); err != nil {
			return stall(flv1.ReasonInvalidResource, "%s: apiVersion %q: %v", what, o.GetAPIVersion(), err)
		}
		if o.GetName() == "" {
			if o.GetGenerateName() != "" {
				return stall(flv1.ReasonInvalidResource, "%s (%s) uses generateName: a delivered object needs a fixed metadata.name", what, o.GetKind())
			}
			return stall(flv1.ReasonInvalidResource, "%s (%s) has no metadata.name", what, o.GetKind())
		}
		key := o.GroupVersionKind().GroupKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
		if j, dup := seen[key]; dup {
			return stall(flv1.ReasonInvalidResource, "%s duplicates resource %d", what, j+1)
		}
		seen[key] = i
	}
	return nil
}

// Render renders objs for the placed clusters: one variant per distinct set of matching
// override rules, however many clusters share it. Any failing rule fails the whole render,
// naming the rule and a cluster it failed for: nothing is half-rendered.
func Render(objs []*unstructured.Unstructured, rules []flv1.OverrideRule, clusters []*flv1.MemberCluster) (*Plan, error) {
	return RenderWith(objs, rules, clusters, nil)
}

// Rerender renders a Helm source again with extra values merged in order over its own.
type Rerender func(extra []map[string]any) ([]*unstructured.Unstructured, error)

// RenderWith is Render for a source that depends on values: for each distinct set of
// matching rules that carries helmValues, the source is rendered again with them (once per
// set, however many clusters share it) before the rules' patches apply.
func RenderWith(objs []*unstructured.Unstructured, rules []flv1.OverrideRule, clusters []*flv1.MemberCluster, rerender Rerender) (*Plan, error) {
	if err := validate(objs); err != nil {
		return nil, err
	}
	base, err := content.Encode(objs)
	if err != nil {
		return nil, stall(flv1.ReasonInvalidResource, "%v", err)
	}
	ruleJSON, err := json.Marshal(rules)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(base.Hash+"\n"), ruleJSON...))
	p := &Plan{Hash: hex.EncodeToString(sum[:]), Base: base, ByCluster: map[string]*Variant{}}

	type group struct {
		matching []int
		clusters []string
	}
	groups := map[string]*group{}
	var keys []string
	for _, mc := range clusters {
		m, err := render.MatchingRules(rules, mc.Labels)
		if err != nil {
			return nil, stall(flv1.ReasonOverrideFailed, "%v", err)
		}
		k := render.RenderKey(m)
		g := groups[k]
		if g == nil {
			g = &group{matching: m}
			groups[k] = g
			keys = append(keys, k)
		}
		g.clusters = append(g.clusters, mc.Name)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		v := &Variant{Content: base, Clusters: g.clusters}
		if len(g.matching) > 0 {
			src, err := withHelmValues(objs, rules, g.matching, rerender)
			if err != nil {
				return nil, stall(flv1.ReasonHelmFailed, "%v (for cluster %s); nothing was sent", err, g.clusters[0])
			}
			out, err := render.ApplyOverrides(src, rules, g.matching)
			if err != nil {
				msg := fmt.Sprintf("%v (for cluster %s", err, g.clusters[0])
				if n := len(g.clusters) - 1; n > 0 {
					msg += fmt.Sprintf(" and %d more", n)
				}
				return nil, stall(flv1.ReasonOverrideFailed, "%s); nothing was sent", msg)
			}
			if v.Content, err = content.Encode(out); err != nil {
				return nil, stall(flv1.ReasonInvalidResource, "%v", err)
			}
		}
		for _, ri := range g.matching {
			v.Rules = append(v.Rules, rules[ri].Name)
		}
		for _, c := range g.clusters {
			p.ByCluster[c] = v
		}
		p.Variants = append(p.Variants, v)
	}
	return p, nil
}

// withHelmValues renders the source again when the matching rules carry helmValues.
func withHelmValues(objs []*unstructured.Unstructured, rules []flv1.OverrideRule, matching []int, rerender Rerender) ([]*unstructured.Unstructured, error) {
	var extra []map[string]any
	for _, i := range matching {
		if v := rules[i].HelmValues; v != nil {
			m := map[string]any{}
			if err := json.Unmarshal(v.Raw, &m); err != nil {
				return nil, fmt.Errorf("override rule %q: helmValues: %v", rules[i].Name, err)
			}
			extra = append(extra, m)
		}
	}
	if len(extra) == 0 {
		return objs, nil
	}
	if rerender == nil {
		return nil, fmt.Errorf("override rules with helmValues apply to a helm source only")
	}
	out, err := rerender(extra)
	if err != nil {
		return nil, err
	}
	return out, validate(out)
}

// RevisionName is the BundleRevision name of a plan: the Bundle's name and a hash prefix.
func RevisionName(bundle, hash string) string { return bundle + "-" + hash[:10] }
