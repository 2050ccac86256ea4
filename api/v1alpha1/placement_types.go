package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Placement chooses the member clusters a Bundle goes to. A cluster is placed when it is
// named in ClusterNames or matches ClusterSelector, is not excluded, and tolerates every
// NoSchedule taint it carries. An empty placement selects no cluster: going everywhere
// must be said (clusterSelector: {}).
type Placement struct {
	// ClusterSelector selects clusters by label; {} selects every cluster.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// ClusterNames places the Bundle on these clusters by name, in addition to the selector.
	// +optional
	// +listType=set
	ClusterNames []string `json:"clusterNames,omitempty"`
	// ExcludeClusterNames are never placed, whatever else matches.
	// +optional
	// +listType=set
	ExcludeClusterNames []string `json:"excludeClusterNames,omitempty"`
	// ExcludeClusterSelector: clusters matching it are never placed.
	// +optional
	ExcludeClusterSelector *metav1.LabelSelector `json:"excludeClusterSelector,omitempty"`
	// Tolerations let the Bundle onto clusters with matching taints.
	// +optional
	Tolerations []Toleration `json:"tolerations,omitempty"`
}

// TolerationOperator says how a toleration matches a taint's value.
// +kubebuilder:validation:Enum=Equal;Exists
type TolerationOperator string

const (
	TolerationOpEqual  TolerationOperator = "Equal"
	TolerationOpExists TolerationOperator = "Exists"
)

// Toleration matches taints by key (empty key with Exists: every taint) and value.
type Toleration struct {
	// +optional
	Key string `json:"key,omitempty"`
	// +optional
	// +kubebuilder:default=Equal
	Operator TolerationOperator `json:"operator,omitempty"`
	// +optional
	Value string `json:"value,omitempty"`
	// Effect to tolerate; empty tolerates every effect.
	// +optional
	Effect TaintEffect `json:"effect,omitempty"`
}
