package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a MemberCluster. The hub owns both.
const (
	// ConditionJoined is True once the hub accepted the cluster, issued its agent's
	// credentials and the agent has heartbeated at least once.
	ConditionJoined = "Joined"
	// ConditionReady is True while the agent's heartbeat Lease is fresher than the grace period.
	ConditionReady = "Ready"
)

// Reasons used on MemberCluster conditions.
const (
	ReasonPendingAcceptance = "PendingAcceptance" // spec.accepted is false
	ReasonProvisioning      = "Provisioning"      // hub namespace, identity or RBAC not in place yet
	ReasonWaitingForAgent   = "WaitingForAgent"   // credentials issued, no heartbeat seen yet
	ReasonAgentConnected    = "AgentConnected"    // the agent has heartbeated
	ReasonHeartbeatFresh    = "HeartbeatFresh"    // last heartbeat within the grace period
	ReasonUnreachable       = "Unreachable"       // last heartbeat older than the grace period
	ReasonProvisionFailed   = "ProvisionFailed"   // the hub could not create the cluster's namespace or RBAC
)

// Well-known labels and names shared by hub, agent and CLI.
const (
	// LabelCluster marks hub objects that belong to one member cluster (value: its name).
	LabelCluster = "flotilla.dev/cluster"
	// ClusterNamespacePrefix prefixes the hub namespace of each member: cluster-<name>.
	ClusterNamespacePrefix = "cluster-"
	// AgentServiceAccount is the name of the agent's identity in its hub namespace.
	AgentServiceAccount = "flotilla-agent"
	// HeartbeatLeaseName is the Lease the agent renews in its hub namespace.
	HeartbeatLeaseName = "flotilla-agent-heartbeat"
	// MemberClusterFinalizer lets the hub revoke credentials before the object goes.
	MemberClusterFinalizer = "flotilla.dev/cleanup"
)

// ClusterNamespace returns the hub namespace that holds a member's objects.
func ClusterNamespace(cluster string) string { return ClusterNamespacePrefix + cluster }

// TaintEffect says what a taint keeps away from a cluster.
// +kubebuilder:validation:Enum=NoSchedule
type TaintEffect string

const (
	// TaintNoSchedule keeps new placements away; what already runs stays.
	TaintNoSchedule TaintEffect = "NoSchedule"
)

// Taint marks a member cluster, for example `maintenance`, so that placements avoid it.
type Taint struct {
	// Key of the taint, for example "maintenance".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
	// Value of the taint; optional.
	// +optional
	Value string `json:"value,omitempty"`
	// Effect of the taint.
	// +kubebuilder:default=NoSchedule
	// +optional
	Effect TaintEffect `json:"effect,omitempty"`
	// Reason is free text for people: why the cluster is tainted.
	// +optional
	Reason string `json:"reason,omitempty"`
	// TimeAdded records when the taint was set.
	// +optional
	TimeAdded *metav1.Time `json:"timeAdded,omitempty"`
}

// MemberClusterSpec is the hub's half of a join.
type MemberClusterSpec struct {
	// Owner is the team or person responsible for the cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Owner string `json:"owner,omitempty"`
	// Accepted is the hub's consent: only accepted clusters get a hub namespace and
	// agent credentials.
	// +optional
	Accepted bool `json:"accepted,omitempty"`
	// Taints keep placements away from this cluster.
	// +optional
	// +listType=map
	// +listMapKey=key
	Taints []Taint `json:"taints,omitempty"`
}

// NodeSummary counts a member's nodes.
type NodeSummary struct {
	// Total number of nodes.
	Total int32 `json:"total"`
	// Ready number of nodes with condition Ready=True.
	Ready int32 `json:"ready"`
}

// ResourceSummary sums what a member's nodes offer and what its pods request.
type ResourceSummary struct {
	// Capacity summed over all nodes.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable summed over all nodes.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Requested sums the container requests of pods bound to a node and not finished,
	// plus the count of such pods under "pods".
	// +optional
	Requested corev1.ResourceList `json:"requested,omitempty"`
}

// ClusterFacts are what a member's agent observes of its cluster. The agent writes them
// into the MemberClusterReport in its own hub namespace; the hub copies them into the
// MemberCluster's status.
type ClusterFacts struct {
	// KubernetesVersion of the member's API server.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Nodes of the member.
	// +optional
	Nodes *NodeSummary `json:"nodes,omitempty"`
	// Resources of the member.
	// +optional
	Resources *ResourceSummary `json:"resources,omitempty"`
	// AgentVersion is the version of the agent binary.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`
	// LastReportTime is when the agent last wrote these facts: when they changed, and at
	// least every 10 minutes.
	// +optional
	LastReportTime *metav1.Time `json:"lastReportTime,omitempty"`
}

// MemberClusterStatus is written by the hub only: its conditions, and the facts the
// cluster's agent reports through its MemberClusterReport.
type MemberClusterStatus struct {
	// ObservedGeneration is the generation the hub last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Joined and Ready, owned by the hub.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Namespace on the hub that holds this cluster's objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// ClusterFacts are what the agent observed of its member, copied by the hub from the
	// cluster's MemberClusterReport.
	ClusterFacts `json:",inline"`
	// LastHeartbeatTime is the renew time of the agent's heartbeat Lease, recorded by the
	// hub when Ready changes, with every other status change (such as the agent's fact
	// reports, at least every 10 minutes) and at least every 15 minutes (the Lease has the
	// exact time).
	// +optional
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty"`
}

// MemberCluster is one Kubernetes cluster of the fleet.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mc;mcs,categories=flotilla
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes.ready`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MemberCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MemberClusterSpec   `json:"spec,omitempty"`
	Status MemberClusterStatus `json:"status,omitempty"`
}

// MemberClusterList is a list of MemberClusters.
// +kubebuilder:object:root=true
type MemberClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MemberCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MemberCluster{}, &MemberClusterList{})
}
