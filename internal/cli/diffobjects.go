package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Change kinds of one object between what a cluster runs and what it would run.
const (
	changeCreate    = "create"
	changeUpdate    = "change"
	changeDelete    = "delete"
	changeOrphan    = "leave" // dropped, but pruning is off or the deletion policy is Orphan
	changeUnchanged = "unchanged"
)

// objectChange is one object's difference, with a unified diff of its YAML.
type objectChange struct {
	Key    string // Kind namespace/name (group-qualified for non-core groups)
	Change string
	Diff   string
}

// objectKey names an object for humans and for matching the two sides. A namespaced object
// without a namespace takes the Bundle's target namespace, as the agent does; cluster-scoped
// kinds cannot be told apart here without the member, so they keep an empty namespace.
func objectKey(o *unstructured.Unstructured, targetNS string) string {
	gk := o.GroupVersionKind().GroupKind()
	kind := gk.Kind
	if gk.Group != "" {
		kind += "." + gk.Group
	}
	ns := o.GetNamespace()
	if ns == "" && targetNS != "" && !clusterScopedKinds[gk.String()] {
		ns = targetNS
	}
	if ns == "" {
		return kind + " " + o.GetName()
	}
	return kind + " " + ns + "/" + o.GetName()
}

// clusterScopedKinds are built-in kinds a Bundle commonly carries that never take a namespace.
var clusterScopedKinds = map[string]bool{
	"Namespace": true, "CustomResourceDefinition.apiextensions.k8s.io": true,
	"ClusterRole.rbac.authorization.k8s.io": true, "ClusterRoleBinding.rbac.authorization.k8s.io": true,
	"PriorityClass.scheduling.k8s.io": true, "StorageClass.storage.k8s.io": true,
	"ValidatingWebhookConfiguration.admissionregistration.k8s.io": true,
	"MutatingWebhookConfiguration.admissionregistration.k8s.io":   true,
	"PersistentVolume": true, "IngressClass.networking.k8s.io": true,
}

// diffObjects compares two renderings object by object. removeDropped says whether objects
// only in running would be deleted (prune on, deletion policy Delete) or left alone.
func diffObjects(running, desired []*unstructured.Unstructured, targetNS, fromLabel, toLabel string, removeDropped bool) ([]objectChange, error) {
	from, to := map[string]*unstructured.Unstructured{}, map[string]*unstructured.Unstructured{}
	for _, o := range running {
		from[objectKey(o, targetNS)] = o
	}
	for _, o := range desired {
		to[objectKey(o, targetNS)] = o
	}
	keys := make([]string, 0, len(from)+len(to))
	for k := range from {
		keys = append(keys, k)
	}
	for k := range to {
		if _, ok := from[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []objectChange
	for _, k := range keys {
		a, b := from[k], to[k]
		ya, err := yamlOf(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		yb, err := yamlOf(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		c := objectChange{Key: k}
		switch {
		case a == nil:
			c.Change = changeCreate
		case b == nil && removeDropped:
			c.Change = changeDelete
		case b == nil:
			c.Change, yb = changeOrphan, ya
		case ya == yb:
			c.Change = changeUnchanged
		default:
			c.Change = changeUpdate
		}
		if ya != yb {
			c.Diff, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
				A: lines(ya), B: lines(yb),
				FromFile: fromLabel, ToFile: toLabel, Context: 3,
			})
			if err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func yamlOf(o *unstructured.Unstructured) (string, error) {
	if o == nil {
		return "", nil
	}
	b, err := yaml.Marshal(o.Object)
	return string(b), err
}

// summarizeChanges counts changes by kind, for the closing line of a diff.
func summarizeChanges(cs []objectChange) string {
	n := map[string]int{}
	for _, c := range cs {
		n[c.Change]++
	}
	parts := []string{
		fmt.Sprintf("%d to create", n[changeCreate]), fmt.Sprintf("%d to change", n[changeUpdate]),
		fmt.Sprintf("%d to delete", n[changeDelete]),
	}
	if n[changeOrphan] > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped but left in place", n[changeOrphan]))
	}
	parts = append(parts, fmt.Sprintf("%d unchanged", n[changeUnchanged]))
	return strings.Join(parts, ", ")
}

// lines splits YAML for difflib; an absent object has no lines at all.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(s)
}
