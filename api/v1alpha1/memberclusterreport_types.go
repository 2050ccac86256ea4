package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MemberClusterReport is what a member's agent reports about its cluster. It lives in the
// cluster's hub namespace (cluster-<name>) under the cluster's name, and the agent may
// write nothing outside that namespace: the hub copies the facts into the MemberCluster,
// trusting the namespace, never a name or label inside the report. This keeps every
// agent grant namespaced — a grant on its own cluster-scoped MemberCluster would need one
// ClusterRoleBinding per cluster, and the API server's authorizer scans every
// ClusterRoleBinding on every request.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mcr,categories=flotilla
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.facts.kubernetesVersion`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.facts.nodes.ready`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.facts.agentVersion`
// +kubebuilder:printcolumn:name="Reported",type=date,JSONPath=`.facts.lastReportTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MemberClusterReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Facts the agent observed.
	// +optional
	Facts ClusterFacts `json:"facts,omitempty"`
}

// MemberClusterReportList is a list of MemberClusterReports.
// +kubebuilder:object:root=true
type MemberClusterReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberClusterReport `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MemberClusterReport{}, &MemberClusterReportList{})
}
