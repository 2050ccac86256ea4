// Package placement decides which member clusters a Bundle goes to. It is pure: the bundle
// controller reads the clusters and calls it on every change of a Bundle or a cluster.
package placement

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// Result is a placement decision.
type Result struct {
	// Selected clusters, sorted by name.
	Selected []string
	// Missing: names in clusterNames that are not (or not yet) in the fleet.
	Missing []string
	// Tainted: clusters that would be selected but carry a taint the Bundle does not tolerate.
	Tainted []string
	// NotAccepted: clusters that would be selected but are not accepted or are leaving.
	NotAccepted []string
}

// Select applies a placement to the fleet.
func Select(p flv1.Placement, clusters []flv1.MemberCluster) (Result, error) {
	include, err := selector(p.ClusterSelector)
	if err != nil {
		return Result{}, fmt.Errorf("placement.clusterSelector: %w", err)
	}
	exclude, err := selector(p.ExcludeClusterSelector)
	if err != nil {
		return Result{}, fmt.Errorf("placement.excludeClusterSelector: %w", err)
	}
	named := set(p.ClusterNames)
	excluded := set(p.ExcludeClusterNames)
	var r Result
	seen := map[string]bool{}
	for i := range clusters {
		mc := &clusters[i]
		seen[mc.Name] = true
		l := labels.Set(mc.Labels)
		if !named[mc.Name] && (include == nil || !include.Matches(l)) {
			continue
		}
		if excluded[mc.Name] || (exclude != nil && exclude.Matches(l)) {
			continue
		}
		switch {
		case !mc.Spec.Accepted || !mc.DeletionTimestamp.IsZero():
			r.NotAccepted = append(r.NotAccepted, mc.Name)
		case !Tolerates(p.Tolerations, mc.Spec.Taints):
			r.Tainted = append(r.Tainted, mc.Name)
		default:
			r.Selected = append(r.Selected, mc.Name)
		}
	}
	for n := range named {
		if !seen[n] && !excluded[n] {
			r.Missing = append(r.Missing, n)
		}
	}
	for _, s := range [][]string{r.Selected, r.Missing, r.Tainted, r.NotAccepted} {
		sort.Strings(s)
	}
	return r, nil
}

// selector converts a label selector; nil stays nil (selects nothing), {} selects all.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// Tolerates reports whether every NoSchedule taint is tolerated.
func Tolerates(tolerations []flv1.Toleration, taints []flv1.Taint) bool {
	for _, taint := range taints {
		if taint.Effect != "" && taint.Effect != flv1.TaintNoSchedule {
			continue
		}
		ok := false
		for _, t := range tolerations {
			if tolerationMatches(t, taint) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func tolerationMatches(t flv1.Toleration, taint flv1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect && !(taint.Effect == "" && t.Effect == flv1.TaintNoSchedule) {
		return false
	}
	switch t.Operator {
	case flv1.TolerationOpExists:
		return t.Key == "" || t.Key == taint.Key
	default: // Equal
		return t.Key == taint.Key && t.Value == taint.Value
	}
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
