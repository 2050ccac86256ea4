package join

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// MaxNameLength keeps the hub namespace cluster-<name> within the 63 characters of a label.
const MaxNameLength = 63 - len(flv1.ClusterNamespacePrefix)

// ValidateName checks a cluster name: a DNS label short enough for its hub namespace.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("cluster name is required")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("invalid cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("invalid cluster name %q: at most %d characters (its hub namespace is %s<name>)", name, MaxNameLength, flv1.ClusterNamespacePrefix)
	}
	return nil
}

// ParseLabels parses "k=v,k2=v2" into labels, validating keys and values as Kubernetes does.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("invalid label %q: want key=value", kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("invalid label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("invalid value %q for label %q: %s", v, k, strings.Join(errs, "; "))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("label %q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// FormatLabels is the inverse of ParseLabels, keys sorted.
func FormatLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}
