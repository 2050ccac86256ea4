package v1alpha1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// LabelRolloutSeq numbers a Bundle's Rollouts: <bundle>-<seq> is the seq-th.
const LabelRolloutSeq = "flotilla.dev/rollout-seq"

// Seq is the rollout's number among its Bundle's Rollouts (0 when unlabelled).
func (r *Rollout) Seq() int {
	n, _ := strconv.Atoi(r.Labels[LabelRolloutSeq])
	return n
}

// RemainingWave is the name of the implicit last wave: the clusters that match no wave.
const RemainingWave = "remaining"

// FailurePolicy says what a rollout does once its failure budget is exhausted or a wave
// times out.
// +kubebuilder:validation:Enum=Halt;Rollback
type FailurePolicy string

const (
	// FailureHalt stops moving clusters; those already moved stay where they are.
	FailureHalt FailurePolicy = "Halt"
	// FailureRollback stops and returns every moved cluster to the rollout's from-revision.
	FailureRollback FailurePolicy = "Rollback"
)

// Wave is one step of a rollout: the clusters matching its selector (and no earlier wave).
type Wave struct {
	// Name of the wave, unique in the strategy; "remaining" is reserved.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'remaining'",message="the wave name \"remaining\" is reserved for the clusters that match no wave"
	Name string `json:"name"`
	// ClusterSelector chooses the wave's clusters among those the Bundle is placed on.
	// A cluster belongs to the first wave it matches. {} matches every cluster.
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`
	// MaxConcurrent is how many of the wave's clusters may be updating (moved, not yet
	// healthy nor failed) at once: a number, or a percentage of the wave rounded up
	// (at least 1). Default 100%.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="maxConcurrent is a number of at least 1 or a percentage from 1% to 100%"
	MaxConcurrent *intstr.IntOrString `json:"maxConcurrent,omitempty"`
	// Soak is how long every cluster of the wave must stay healthy before the wave passes.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="soak must not be negative"
	Soak *metav1.Duration `json:"soak,omitempty"`
	// Approval: the wave starts only once someone approved it (spec.approvals of the Rollout,
	// `flotilla rollout approve`).
	// +optional
	Approval bool `json:"approval,omitempty"`
}

// RolloutStrategy says how a new revision moves through the fleet.
// +kubebuilder:validation:XValidation:rule="!has(self.waveTimeout) || !has(self.waves) || self.waves.all(w, !has(w.soak) || duration(w.soak) < duration(self.waveTimeout))",message="every wave's soak must be shorter than waveTimeout, or the wave can never pass"
type RolloutStrategy struct {
	// Waves, in order. Clusters matching no wave form a final implicit wave "remaining",
	// so nobody is skipped.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	Waves []Wave `json:"waves,omitempty"`
	// RemainingMaxConcurrent is maxConcurrent for the implicit wave "remaining" (default 100%).
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="remainingMaxConcurrent is a number of at least 1 or a percentage from 1% to 100%"
	RemainingMaxConcurrent *intstr.IntOrString `json:"remainingMaxConcurrent,omitempty"`
	// ProgressDeadline: a cluster not healthy this long after it was moved counts as
	// failed; so does an unreachable one. Default 10m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="progressDeadline must be positive"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
	// WaveTimeout: a wave that has not passed this long after it started halts the rollout.
	// Time spent paused does not count. Unset: no timeout.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="waveTimeout must be positive"
	WaveTimeout *metav1.Duration `json:"waveTimeout,omitempty"`
	// FailureBudget is how many clusters may fail over the whole rollout: a number, or a
	// percentage of the clusters in the rollout rounded down. One more failure than the
	// budget halts the rollout. Default 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="failureBudget is a number of at least 0 or a percentage from 0% to 100%"
	FailureBudget *intstr.IntOrString `json:"failureBudget,omitempty"`
	// OnFailure: Halt (default) or Rollback, once the budget is exhausted or a wave timed out.
	// +optional
	// +kubebuilder:default=Halt
	OnFailure FailurePolicy `json:"onFailure,omitempty"`
	// DimensionLabels are the label keys failures are grouped by in the Rollout's status
	// (default env, region, provider).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	DimensionLabels []string `json:"dimensionLabels,omitempty"`
}

// RolloutPhase is where a rollout stands.
// +kubebuilder:validation:Enum=Progressing;WaitingForApproval;Soaking;Paused;Halted;RollingBack;RolledBack;Succeeded;Superseded
type RolloutPhase string

const (
	PhaseProgressing        RolloutPhase = "Progressing"
	PhaseWaitingForApproval RolloutPhase = "WaitingForApproval"
	PhaseSoaking            RolloutPhase = "Soaking"
	PhasePaused             RolloutPhase = "Paused"
	PhaseHalted             RolloutPhase = "Halted"
	PhaseRollingBack        RolloutPhase = "RollingBack"
	PhaseRolledBack         RolloutPhase = "RolledBack"
	PhaseSucceeded          RolloutPhase = "Succeeded"
	PhaseSuperseded         RolloutPhase = "Superseded"
)

// Done reports whether a rollout in this phase will move no cluster any more.
func (p RolloutPhase) Done() bool {
	return p == PhaseSucceeded || p == PhaseRolledBack || p == PhaseSuperseded
}

// WavePhase is where one wave stands.
type WavePhase string

const (
	WavePending            WavePhase = "Pending"
	WaveWaitingForApproval WavePhase = "WaitingForApproval"
	WaveProgressing        WavePhase = "Progressing"
	WaveSoaking            WavePhase = "Soaking"
	WavePassed             WavePhase = "Passed"
	WaveTimedOut           WavePhase = "TimedOut"
)

// Approval lets a wave that asks for one start.
type Approval struct {
	// Wave approved.
	// +kubebuilder:validation:MinLength=1
	Wave string `json:"wave"`
	// By is who approved.
	// +kubebuilder:validation:MinLength=1
	By string `json:"by"`
	// At is when.
	At metav1.Time `json:"at"`
	// Comment, for the record.
	// +optional
	Comment string `json:"comment,omitempty"`
}

// RolloutAction is one recorded user action on a rollout: who did what, when and why.
type RolloutAction struct {
	// Action: Pause, Resume, Abort, Rollback (approvals are in spec.approvals).
	// +kubebuilder:validation:Enum=Pause;Resume;Abort;Rollback
	Action string `json:"action"`
	// +kubebuilder:validation:MinLength=1
	By string      `json:"by"`
	At metav1.Time `json:"at"`
	// +optional
	Reason string `json:"reason,omitempty"`
}

// RolloutSpec is one move of a Bundle from one revision to another, and what people said
// about it. The hub creates it; people act on it (the CLI or kubectl).
// +kubebuilder:validation:XValidation:rule="self.bundle == oldSelf.bundle && self.to == oldSelf.to && has(self.from) == has(oldSelf.from) && (!has(self.from) || self.from == oldSelf.from)",message="bundle, from and to of a Rollout never change"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.rollback) || !oldSelf.rollback || (has(self.rollback) && self.rollback)",message="a rollback, once asked for, cannot be withdrawn"
type RolloutSpec struct {
	// Bundle (same namespace).
	Bundle string `json:"bundle"`
	// From is the revision the fleet ran before (the last one that fully rolled out);
	// empty for a Bundle's first delivery. A rollback returns every moved cluster to it.
	// +optional
	From string `json:"from,omitempty"`
	// To is the revision this rollout delivers.
	To string `json:"to"`
	// FromSource and ToSource are where those revisions were rendered from ("<ref>@<commit>"
	// for a git source): which commits the rollout moves between.
	// +optional
	FromSource string `json:"fromSource,omitempty"`
	// +optional
	ToSource string `json:"toSource,omitempty"`
	// Strategy is the Bundle's spec.rollout when the rollout started. Editing it here
	// (for example raising the failure budget of a halted rollout) affects only this rollout.
	Strategy RolloutStrategy `json:"strategy"`
	// Paused: no cluster is moved and no wave starts; deadlines of clusters already moved
	// still run, and wave timeouts stop.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Approvals of waves that ask for one.
	// +optional
	// +listType=map
	// +listMapKey=wave
	Approvals []Approval `json:"approvals,omitempty"`
	// Abort stops the rollout where it stands: no cluster moves any more (Halted).
	// +optional
	Abort bool `json:"abort,omitempty"`
	// Rollback stops the rollout and returns every moved cluster to From, at once.
	// +optional
	Rollback bool `json:"rollback,omitempty"`
	// Actions is the record of who paused, resumed, aborted or rolled back, when and why
	// (the CLI appends to it).
	// +optional
	// +listType=atomic
	Actions []RolloutAction `json:"actions,omitempty"`
}

// WaveStatus is one wave's progress.
type WaveStatus struct {
	Name  string    `json:"name"`
	Phase WavePhase `json:"phase"`
	// Clusters in the wave now.
	Clusters int32 `json:"clusters"`
	// Updated: clusters moved to the new revision.
	Updated int32 `json:"updated"`
	// Healthy: updated clusters that applied it and are available.
	Healthy int32 `json:"healthy"`
	// Failed: clusters counted as failed.
	Failed int32 `json:"failed"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// SoakStartedAt is when every cluster of the wave last became healthy (or failed).
	// +optional
	SoakStartedAt *metav1.Time `json:"soakStartedAt,omitempty"`
	// TimeoutAt is when the wave halts the rollout if it has not passed (waveTimeout after
	// it started, plus time spent paused).
	// +optional
	TimeoutAt *metav1.Time `json:"timeoutAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// FailureBudgetStatus is the budget of failures over the whole rollout.
type FailureBudgetStatus struct {
	// Allowed failures.
	// +optional
	Allowed int32 `json:"allowed"`
	// Used: clusters counted as failed so far.
	// +optional
	Used int32 `json:"used"`
}

// DimensionFailures counts failures among the clusters sharing one label value.
type DimensionFailures struct {
	// Label key, for example region.
	Label string `json:"label"`
	// Value of the label ("" for clusters without it).
	Value string `json:"value"`
	// Failed clusters with this value.
	Failed int32 `json:"failed"`
	// Clusters in the rollout with this value.
	Clusters int32 `json:"clusters"`
}

// ClusterFailure is one failed cluster and why.
type ClusterFailure struct {
	Cluster string      `json:"cluster"`
	Wave    string      `json:"wave"`
	Reason  string      `json:"reason"`
	At      metav1.Time `json:"at"`
}

// RolloutClusterCounts sum the clusters of a rollout.
type RolloutClusterCounts struct {
	// Total clusters in the rollout (placed now).
	// +optional
	Total int32 `json:"total"`
	// Updated: clusters whose Work asks for the new revision.
	// +optional
	Updated int32 `json:"updated"`
	// Healthy: updated clusters that applied it and are available.
	// +optional
	Healthy int32 `json:"healthy"`
	// Failed: clusters counted as failed.
	// +optional
	Failed int32 `json:"failed"`
	// Unreachable clusters (stale heartbeat).
	// +optional
	Unreachable int32 `json:"unreachable"`
}

// Condition types and reasons of a Rollout.
const (
	// ConditionRolloutReady (type "Ready") is True once the rollout succeeded.
	ConditionRolloutReady = ConditionReady
	// ConditionHalted is True while the rollout is halted, and says why.
	ConditionHalted = "Halted"

	ReasonBudgetExhausted = "FailureBudgetExhausted"
	ReasonWaveTimedOut    = "WaveTimedOut"
	ReasonAborted         = "Aborted"
	ReasonRollbackAsked   = "RollbackRequested"
	ReasonRolloutDone     = "Succeeded"
)

// RolloutStatus is the rollout's progress, summed over the fleet: its size does not grow
// with the fleet (per-cluster state lives in each Work's spec.rollout).
type RolloutStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// Message says what the rollout is doing or waiting for.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions: Ready, Halted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Waves []WaveStatus `json:"waves,omitempty"`
	// +optional
	FailureBudget FailureBudgetStatus `json:"failureBudget,omitempty"`
	// +optional
	Clusters RolloutClusterCounts `json:"clusters,omitempty"`
	// UpdatedPercent is the share of the rollout's clusters whose Work asks for the new revision.
	// +optional
	UpdatedPercent int32 `json:"updatedPercent"`
	// FailuresByDimension groups failures by the strategy's dimension labels (at most 50
	// entries, most failures first).
	// +optional
	// +listType=atomic
	FailuresByDimension []DimensionFailures `json:"failuresByDimension,omitempty"`
	// FailedClusters are the first 50 failed clusters, with reasons.
	// +optional
	// +listType=atomic
	FailedClusters []ClusterFailure `json:"failedClusters,omitempty"`
	// PendingRollback are clusters (at most 50) whose Work was returned to the from-revision
	// but that have not applied it yet, typically unreachable ones: they roll back when they
	// return. PendingRollbackCount counts all of them.
	// +optional
	// +listType=atomic
	PendingRollback []string `json:"pendingRollback,omitempty"`
	// +optional
	PendingRollbackCount int32 `json:"pendingRollbackCount,omitempty"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// PausedAt is when the current pause began.
	// +optional
	PausedAt *metav1.Time `json:"pausedAt,omitempty"`
	// RollbackStartedAt is when the rollback began, asked for or forced by onFailure: Rollback.
	// +optional
	RollbackStartedAt *metav1.Time `json:"rollbackStartedAt,omitempty"`
	// HaltReason is why the rollout halted (FailureBudgetExhausted, WaveTimedOut, Aborted).
	// +optional
	HaltReason string `json:"haltReason,omitempty"`
}

// Rollout is one move of a Bundle from revision From to revision To under the Bundle's
// rollout strategy: waves, soak, approvals, timeouts and a failure budget. Finished
// Rollouts are kept (the Bundle's rolloutHistoryLimit) as the audit trail.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ro,categories=flotilla
// +kubebuilder:printcolumn:name="Bundle",type=string,JSONPath=`.spec.bundle`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Updated",type=string,JSONPath=`.status.updatedPercent`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failureBudget.used`
// +kubebuilder:printcolumn:name="Budget",type=integer,JSONPath=`.status.failureBudget.allowed`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutSpec   `json:"spec,omitempty"`
	Status RolloutStatus `json:"status,omitempty"`
}

// RolloutList is a list of Rollouts.
// +kubebuilder:object:root=true
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

func init() { SchemeBuilder.Register(&Rollout{}, &RolloutList{}) }
