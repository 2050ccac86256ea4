// Package apply is the agent's applier: server-side apply of a Work's objects to the member
// cluster in a safe order, pruning of what an earlier apply left and this one dropped, and
// health of each object by kstatus.
package apply

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// phase orders objects: definitions and namespaces before what lives in them, admission
// webhooks last so that a webhook whose backend is not up yet cannot block the rest.
func phase(o *unstructured.Unstructured) int {
	gk := o.GroupVersionKind().GroupKind()
	switch {
	case gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition":
		return 0
	case gk.Group == "" && gk.Kind == "Namespace":
		return 1
	case gk.Group == "admissionregistration.k8s.io":
		return 3
	default:
		return 2
	}
}

// Sort orders objects for applying (stable within a phase); prune in the reverse order.
func Sort(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool { return phase(objs[i]) < phase(objs[j]) })
}
