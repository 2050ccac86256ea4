package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types of a Work. The agent owns them.
const (
	// ConditionApplied is True when every object of the Work's revision was applied.
	ConditionApplied = "Applied"
	// ConditionAvailable is True when every applied object is healthy (kstatus Current).
	ConditionAvailable = "Available"
	// ConditionDrifted is True when live objects differ from what was delivered.
	ConditionDrifted = "Drifted"
)

// Reasons used on Work conditions.
const (
	ReasonApplySucceeded   = "ApplySucceeded"
	ReasonApplyFailed      = "ApplyFailed"      // some objects could not be applied; see status.resources
	ReasonContentFailed    = "ContentFailed"    // content could not be fetched or verified
	ReasonVariablesFailed  = "VariablesFailed"  // a ${cluster...} reference could not be substituted
	ReasonInProgress       = "InProgress"       // objects are not healthy yet
	ReasonResourcesFailed  = "ResourcesFailed"  // some objects report kstatus Failed
	ReasonAllCurrent       = "AllCurrent"       // every object is healthy
	ReasonNoDrift          = "NoDrift"          // live objects match
	ReasonDriftDetected    = "DriftDetected"    // live objects differ; see status.resources[].drift
	ReasonDriftCorrected   = "DriftCorrected"   // differences were found and restored
	ReasonBreakGlassActive = "BreakGlassActive" // correction is suspended until spec.breakGlass.until
)

// BundleReference names the Bundle a Work comes from.
type BundleReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// WorkVariables are the facts of the cluster that ${cluster.*} references resolve to.
type WorkVariables struct {
	// ClusterName is ${cluster.name}.
	ClusterName string `json:"clusterName"`
	// Owner is ${cluster.owner}.
	// +optional
	Owner string `json:"owner,omitempty"`
	// Labels are ${cluster.labels.KEY}.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// BreakGlass suspends drift correction on one cluster for a bounded time, on record.
type BreakGlass struct {
	// Until correction is suspended; it resumes by itself then.
	Until metav1.Time `json:"until"`
	// By is who broke the glass.
	By string `json:"by"`
	// Reason is why.
	// +kubebuilder:validation:MinLength=1
	Reason string `json:"reason"`
	// At is when.
	At metav1.Time `json:"at"`
}

// WorkSpec is what one member runs for one Bundle. The hub writes it; the rollout
// controller moves spec.revision cluster by cluster.
type WorkSpec struct {
	Bundle BundleReference `json:"bundle"`
	// Revision is the BundleRevision this cluster should run.
	Revision string `json:"revision"`
	// Content of this cluster's variant of the revision.
	Content ContentReference `json:"content"`
	// SourceRevision is where the revision was rendered from ("<ref>@<commit>" for a git
	// source): which commit runs on this cluster.
	// +optional
	SourceRevision string `json:"sourceRevision,omitempty"`
	// Variables substituted into the content on the member.
	Variables WorkVariables `json:"variables"`
	// TargetNamespace for namespaced objects that name none.
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// Apply options, from the Bundle.
	// +optional
	Apply ApplyOptions `json:"apply,omitempty"`
	// BreakGlass, when set and not expired, suspends drift correction (drift is reported).
	// +optional
	BreakGlass *BreakGlass `json:"breakGlass,omitempty"`
	// Rollout is the hub's record of this cluster in the Bundle's rollouts: which rollout
	// last moved it, when, and whether it counted as failed. The agent ignores it.
	// +optional
	Rollout *WorkRollout `json:"rollout,omitempty"`
}

// WorkRollout is one cluster's part in a rollout, kept in its Work so that no object grows
// with the fleet. The hub writes it together with every move of spec.revision.
type WorkRollout struct {
	// Name of the Rollout that last moved this cluster.
	Name string `json:"name"`
	// Wave the cluster was in when it moved.
	Wave string `json:"wave"`
	// MovedAt is when spec.revision was last set by that rollout.
	MovedAt metav1.Time `json:"movedAt"`
	// FailedAt is when the rollout counted this cluster as failed.
	// +optional
	FailedAt *metav1.Time `json:"failedAt,omitempty"`
	// FailureReason says why.
	// +optional
	FailureReason string `json:"failureReason,omitempty"`
}

// FieldDrift is one field that differs between what was delivered and what runs.
type FieldDrift struct {
	// Path is a JSON pointer.
	Path string `json:"path"`
	// Desired value as JSON ("" when the field should be absent).
	// +optional
	Desired string `json:"desired,omitempty"`
	// Live value as JSON ("" when the field is absent).
	// +optional
	Live string `json:"live,omitempty"`
}

// ResourceStatus is the state of one delivered object.
type ResourceStatus struct {
	// +optional
	Group   string `json:"group,omitempty"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Health by kstatus: Current, InProgress, Failed, Terminating, NotFound, Unknown.
	// +optional
	Health string `json:"health,omitempty"`
	// Message explains the health or the error.
	// +optional
	Message string `json:"message,omitempty"`
	// Error applying the object, if any.
	// +optional
	Error string `json:"error,omitempty"`
	// Drift: fields that differ (at most 20 per object are listed).
	// +optional
	// +listType=atomic
	Drift []FieldDrift `json:"drift,omitempty"`
}

// WorkStatus is written by the member's agent.
type WorkStatus struct {
	// ObservedGeneration is the Work generation the agent last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Applied, Available, Drifted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// AppliedRevision is the revision the member last applied in full.
	// +optional
	AppliedRevision string `json:"appliedRevision,omitempty"`
	// AppliedHash is the content hash of that application.
	// +optional
	AppliedHash string `json:"appliedHash,omitempty"`
	// LastAppliedTime is when the member last applied (first apply or correction).
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// Resources: one entry per delivered object.
	// +optional
	// +listType=atomic
	Resources []ResourceStatus `json:"resources,omitempty"`
	// Corrections counts drift corrections since the agent started.
	// +optional
	Corrections int64 `json:"corrections,omitempty"`
}

// Work is what one member cluster runs for one Bundle, in the hub namespace cluster-<name>.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=flotilla
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Drifted",type=string,JSONPath=`.status.conditions[?(@.type=="Drifted")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="Applied-Revision",type=string,JSONPath=`.status.appliedRevision`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkSpec   `json:"spec,omitempty"`
	Status WorkStatus `json:"status,omitempty"`
}

// WorkList is a list of Works.
// +kubebuilder:object:root=true
type WorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Work `json:"items"`
}

func init() { SchemeBuilder.Register(&Work{}, &WorkList{}) }
