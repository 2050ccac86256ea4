package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OverrideRule changes some objects of a Bundle for the clusters it selects. Rules apply in
// order, each to the result of the ones before. Values may use the variables
// ${cluster.name}, ${cluster.owner} and ${cluster.labels.KEY}, which are substituted for each
// cluster at the edge.
type OverrideRule struct {
	// Name identifies the rule in conditions and errors.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// ClusterSelector: the clusters the rule applies to; nil means every placed cluster.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Target: the objects the patches apply to. A rule whose target matches no object of
	// the Bundle is an error: a patch aimed at nothing is almost always a typo. Required with
	// jsonPatch or mergePatch.
	// +optional
	Target *ResourceSelector `json:"target,omitempty"`
	// JSONPatch is a list of RFC 6902 operations.
	// +optional
	JSONPatch []JSONPatchOperation `json:"jsonPatch,omitempty"`
	// MergePatch is a strategic-merge patch for built-in kinds (lists merged by their keys,
	// such as containers by name) and an RFC 7386 JSON merge patch for other kinds.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	MergePatch *apiextensionsv1.JSON `json:"mergePatch,omitempty"`
	// HelmValues are merged over a Helm source's values for the clusters the rule selects,
	// before the chart is rendered (once per distinct set of values).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	HelmValues *apiextensionsv1.JSON `json:"helmValues,omitempty"`
}

// ResourceSelector picks objects by group, kind, namespace and name; empty fields match all.
type ResourceSelector struct {
	// Group of the object's API ("" is the core group, "apps", ...).
	// +optional
	Group string `json:"group,omitempty"`
	// Kind of the object, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
}

// JSONPatchOperation is one RFC 6902 operation.
type JSONPatchOperation struct {
	// +kubebuilder:validation:Enum=add;remove;replace;move;copy;test
	Op string `json:"op"`
	// Path is a JSON pointer, e.g. /spec/replicas.
	Path string `json:"path"`
	// From is the source pointer of move and copy.
	// +optional
	From string `json:"from,omitempty"`
	// Value of add, replace and test.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}
