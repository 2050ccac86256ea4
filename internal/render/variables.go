package render

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Vars are the facts of one cluster that content may refer to.
type Vars struct {
	Name   string
	Owner  string
	Labels map[string]string
}

// A reference is ${cluster.name}, ${cluster.owner} or ${cluster.labels.KEY}; $${...} stands
// for a literal ${...}. Other ${...} text (shell in a ConfigMap, say) is left alone.
var varRef = regexp.MustCompile(`\$?\$\{cluster\.([^}]*)\}`)

// SubstituteString replaces the cluster variables in s.
func SubstituteString(s string, v Vars) (string, error) {
	if !strings.Contains(s, "${cluster.") {
		return s, nil
	}
	var errs []string
	out := varRef.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "$$") {
			return m[1:]
		}
		ref := varRef.FindStringSubmatch(m)[1]
		switch {
		case ref == "name":
			return v.Name
		case ref == "owner":
			return v.Owner
		case strings.HasPrefix(ref, "labels."):
			key := strings.TrimPrefix(ref, "labels.")
			val, ok := v.Labels[key]
			if !ok {
				errs = append(errs, fmt.Sprintf("cluster %s has no label %q (referenced as %s)", v.Name, key, m))
			}
			return val
		default:
			errs = append(errs, fmt.Sprintf("unknown variable %s: use ${cluster.name}, ${cluster.owner} or ${cluster.labels.KEY}", m))
			return m
		}
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// Substitute replaces the cluster variables in every string value (not keys) of the objects,
// in place.
func Substitute(objs []*unstructured.Unstructured, v Vars) error {
	for _, o := range objs {
		res, err := substituteValue(o.Object, v)
		if err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), objectName(o), err)
		}
		o.Object = res.(map[string]any)
	}
	return nil
}

func substituteValue(x any, v Vars) (any, error) {
	switch t := x.(type) {
	case string:
		return SubstituteString(t, v)
	case map[string]any:
		for k, e := range t {
			r, err := substituteValue(e, v)
			if err != nil {
				return nil, err
			}
			t[k] = r
		}
		return t, nil
	case []any:
		for i, e := range t {
			r, err := substituteValue(e, v)
			if err != nil {
				return nil, err
			}
			t[i] = r
		}
		return t, nil
	default:
		return x, nil
	}
}
