package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Condition types of a Bundle, owned by the hub's bundle controller: ConditionReady (True
// when every targeted cluster runs the current revision and it is available there) and:
const (
	// ConditionStalled is True when the Bundle cannot be rendered as written (bad source,
	// an override that does not apply): nothing new is sent until it is fixed.
	ConditionStalled = "Stalled"
)

// Reasons used on Bundle conditions.
const (
	ReasonInvalidSource    = "InvalidSource"    // the source does not parse or misses a referenced ConfigMap
	ReasonSourceNotReady   = "SourceNotReady"   // the GitRepository has not fetched a commit yet
	ReasonKustomizeFailed  = "KustomizeFailed"  // the Kustomize build of the path failed
	ReasonHelmFailed       = "HelmFailed"       // the chart could not be fetched or rendered
	ReasonInvalidResource  = "InvalidResource"  // an object has no apiVersion, kind or name, or is duplicated
	ReasonOverrideFailed   = "OverrideFailed"   // an override rule does not apply for some cluster
	ReasonInvalidPlacement = "InvalidPlacement" // a selector does not parse
	ReasonStorageFailed    = "StorageFailed"    // the revision could not be stored on the hub
	ReasonRendered         = "Rendered"         // rendered and stored; not stalled
	ReasonPaused           = "Paused"           // spec.paused: Works are left as they are
	ReasonNoClusters       = "NoClusters"       // the placement selects no cluster
	ReasonProgressing      = "Progressing"      // some clusters are not yet available at the revision
	ReasonAvailable        = "Available"        // every targeted cluster is available at the revision
	ReasonFailing          = "Failing"          // some clusters failed to apply or are unhealthy
	ReasonRolloutHalted    = "RolloutHalted"    // the rollout stopped: see status.rollout
	ReasonRolledBack       = "RolledBack"       // the rollout returned the fleet to its previous revision
)

// Labels the hub puts on the objects it derives from a Bundle.
const (
	LabelBundleNamespace = "flotilla.dev/bundle-namespace"
	LabelBundleName      = "flotilla.dev/bundle-name"
	LabelBundleUID       = "flotilla.dev/bundle-uid"
	// BundleFinalizer lets the hub remove a deleted Bundle's Works and content first.
	BundleFinalizer = "flotilla.dev/bundle-cleanup"
	// ContentNamespace holds the content chunks of every revision, stored once for the
	// whole fleet. Agents may get a chunk by its (unguessable) name, never list them.
	ContentNamespace = "flotilla-content"
)

// WorkName is the name of a Bundle's Work in a cluster namespace: <namespace>.<name>.
func WorkName(bundleNamespace, bundleName string) string { return bundleNamespace + "." + bundleName }

// BundleSource says where the objects come from. Exactly one source is set.
// +kubebuilder:validation:XValidation:rule="[has(self.inline), has(self.git), has(self.helm)].filter(x, x).size() == 1",message="set exactly one source: inline, git or helm"
type BundleSource struct {
	// Inline objects, written in the Bundle itself or in ConfigMaps beside it.
	// +optional
	Inline *InlineSource `json:"inline,omitempty"`
	// Git reads the objects from a path of a GitRepository at the commit it last fetched:
	// the Kustomize build of the path when it holds a kustomization, else every .yaml, .yml
	// and .json file below it (recursively, in path order, multi-document).
	// +optional
	Git *GitSource `json:"git,omitempty"`
	// Helm renders a chart, from an HTTP chart repository or a chart directory in a
	// GitRepository, with values; overrides may add per-cluster helmValues.
	// +optional
	Helm *HelmSource `json:"helm,omitempty"`
}

// HelmSource is a Helm chart and its values.
// +kubebuilder:validation:XValidation:rule="has(self.git) != (has(self.repository) && has(self.chart))",message="set either repository and chart, or git"
type HelmSource struct {
	// Repository is the URL of an HTTP chart repository (its index.yaml is read).
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	Repository string `json:"repository,omitempty"`
	// Chart is the chart's name in the repository.
	// +optional
	Chart string `json:"chart,omitempty"`
	// Version is an exact version or a semver range ("~1.4"); empty takes the newest. A range
	// is re-resolved every 5 minutes: a new matching version opens a rollout.
	// +optional
	Version string `json:"version,omitempty"`
	// Git is a chart directory in a GitRepository, instead of repository and chart.
	// +optional
	Git *GitSource `json:"git,omitempty"`
	// ReleaseName is .Release.Name (default: the Bundle's name).
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// Values are merged over the chart's defaults, after valuesFrom.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
	// ValuesFrom are ConfigMap or Secret keys holding YAML values, merged in order.
	// +optional
	// +listType=atomic
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`
}

// ValuesReference is a key of a ConfigMap or Secret in the Bundle's namespace.
type ValuesReference struct {
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key (default values.yaml).
	// +optional
	Key string `json:"key,omitempty"`
}

// GitSource is a path in a GitRepository of the Bundle's namespace.
type GitSource struct {
	// Repository is the GitRepository's name.
	Repository LocalObjectReference `json:"repository"`
	// Path in the repository ("" or "." for its root).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.contains('..')",message="path must stay inside the repository (no ..)"
	Path string `json:"path,omitempty"`
}

// InlineSource is a list of objects, and ConfigMaps whose every data key holds YAML
// (one or more documents). ConfigMaps carry Bundles larger than one API object may be:
// `kubectl create configmap web --from-file=manifests/`.
type InlineSource struct {
	// Resources are Kubernetes objects, delivered as written (after overrides and variables).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Resources []runtime.RawExtension `json:"resources,omitempty"`
	// ConfigMaps in the Bundle's namespace whose data keys hold YAML documents, read in key
	// order after resources. A change to one of them makes a new revision.
	// +optional
	// +listType=atomic
	ConfigMaps []LocalObjectReference `json:"configMaps,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// DriftMode says what the agent does when a delivered object is changed by someone else.
// +kubebuilder:validation:Enum=Correct;Report;Ignore
type DriftMode string

const (
	// DriftCorrect restores the delivered state within seconds (the default).
	DriftCorrect DriftMode = "Correct"
	// DriftReport leaves the change and records it, field by field, in the Work's status.
	DriftReport DriftMode = "Report"
	// DriftIgnore neither corrects nor reports.
	DriftIgnore DriftMode = "Ignore"
)

// DeletionPolicy says what happens to delivered objects when a Bundle no longer goes to a
// cluster (deleted, or the cluster no longer placed).
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	DeletionDelete DeletionPolicy = "Delete"
	DeletionOrphan DeletionPolicy = "Orphan"
)

// ApplyOptions say how the agent applies and keeps a Bundle's objects.
type ApplyOptions struct {
	// Prune deletes objects dropped from the Bundle (default true).
	// +optional
	// +kubebuilder:default=true
	Prune *bool `json:"prune,omitempty"`
	// DeletionPolicy: Delete (default) removes the objects when the Bundle is deleted or the
	// cluster is no longer placed; Orphan leaves them.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// Takeover takes ownership of fields another field manager owns. Without it such a
	// conflict is an error on that object only.
	// +optional
	Takeover bool `json:"takeover,omitempty"`
	// Drift is what happens when someone changes a delivered object (default Correct).
	// +optional
	// +kubebuilder:default=Correct
	Drift DriftMode `json:"drift,omitempty"`
	// IgnoreDifferences are fields the agent neither corrects nor reports, such as replicas
	// managed by an autoscaler.
	// +optional
	// +listType=atomic
	IgnoreDifferences []IgnoreRule `json:"ignoreDifferences,omitempty"`
}

// PruneEnabled reports the effective prune setting.
func (o ApplyOptions) PruneEnabled() bool { return o.Prune == nil || *o.Prune }

// IgnoreRule names fields of some objects by JSON pointer.
type IgnoreRule struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// JSONPointers such as /spec/replicas; a pointer also covers everything below it.
	// +kubebuilder:validation:MinItems=1
	JSONPointers []string `json:"jsonPointers"`
}

// BundleSpec is what to deliver and where.
type BundleSpec struct {
	Source BundleSource `json:"source"`
	// TargetNamespace is given to namespaced objects that name none.
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// Placement chooses the clusters. Empty places nowhere; clusterSelector: {} places everywhere.
	// +optional
	Placement Placement `json:"placement,omitempty"`
	// Overrides change objects for some clusters; rules apply in order.
	// +optional
	// +listType=map
	// +listMapKey=name
	Overrides []OverrideRule `json:"overrides,omitempty"`
	// Apply options: prune, deletion policy, takeover, drift handling.
	// +optional
	Apply ApplyOptions `json:"apply,omitempty"`
	// Paused stops the Bundle from moving: no new revision is rendered and no Work changes.
	// What runs keeps running and drift is still handled.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Rollout is the strategy that moves a new revision through the fleet: waves, soak,
	// approvals, timeouts and a failure budget. Without it a new revision goes to every
	// targeted cluster at once.
	// +optional
	Rollout *RolloutStrategy `json:"rollout,omitempty"`
	// RolloutHistoryLimit is how many finished Rollouts are kept as the audit trail (default 10).
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RolloutHistoryLimit *int32 `json:"rolloutHistoryLimit,omitempty"`
	// RevisionHistoryLimit is how many revisions are kept for instant rollback (default 10).
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// RevisionCounts aggregate the clusters at one revision.
type RevisionCounts struct {
	// Revision is the BundleRevision name.
	Revision string `json:"revision"`
	// Clusters whose Work asks for this revision.
	Clusters int32 `json:"clusters"`
	// Applied: the agent applied it without error.
	Applied int32 `json:"applied"`
	// Available: applied and every object healthy (kstatus Current).
	Available int32 `json:"available"`
	// Failed: an object failed to apply or is unhealthy (kstatus Failed).
	Failed int32 `json:"failed"`
	// Drifted: someone changed delivered objects (counted in Report mode and while correcting).
	Drifted int32 `json:"drifted"`
	// Unreachable: the cluster's heartbeat is stale; its counts are as last reported.
	Unreachable int32 `json:"unreachable"`
}

// BundleStatus is the hub's view of a Bundle across the fleet.
type BundleStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Revision is the current BundleRevision: what every targeted cluster should run.
	// +optional
	Revision string `json:"revision,omitempty"`
	// SourceRevision is where the current revision was rendered from, for a git source
	// "<ref>@<commit>" (the commit the GitRepository had fetched).
	// +optional
	SourceRevision string `json:"sourceRevision,omitempty"`
	// Variants is how many distinct renderings the revision has (one per distinct set of
	// matching override rules).
	// +optional
	Variants int32 `json:"variants,omitempty"`
	// Targeted clusters (placed, with a Work).
	// +optional
	Targeted int32 `json:"targeted"`
	// Applied: clusters that applied the current revision without error.
	// +optional
	Applied int32 `json:"applied"`
	// Available: clusters where the current revision is applied and every object healthy.
	// +optional
	Available int32 `json:"available"`
	// Failed: clusters where an object failed to apply or is unhealthy (kstatus Failed).
	// +optional
	Failed int32 `json:"failed"`
	// Drifted: clusters where someone changed delivered objects.
	// +optional
	Drifted int32 `json:"drifted"`
	// Unreachable: targeted clusters whose heartbeat is stale.
	// +optional
	Unreachable int32 `json:"unreachable"`
	// Revisions: the counts per revision that some Work asks for.
	// +optional
	// +listType=map
	// +listMapKey=revision
	Revisions []RevisionCounts `json:"revisions,omitempty"`
	// MissingClusters are names in placement.clusterNames that are not in the fleet.
	// +optional
	// +listType=set
	MissingClusters []string `json:"missingClusters,omitempty"`
	// Excluded counts clusters the placement would select but that are tainted or not accepted.
	// +optional
	Excluded int32 `json:"excluded,omitempty"`
	// Rollout is the Bundle's latest Rollout, when it has a rollout strategy.
	// +optional
	Rollout *BundleRolloutStatus `json:"rollout,omitempty"`
}

// BundleRolloutStatus summarizes the Bundle's latest Rollout.
type BundleRolloutStatus struct {
	// Name of the Rollout (same namespace).
	Name string `json:"name"`
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// From and To revisions.
	// +optional
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// +optional
	Message string `json:"message,omitempty"`
}

// Bundle is what to deliver to the fleet and where: objects, placement, overrides.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bdl,categories=flotilla
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a Bundle name has at most 63 characters"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Targeted",type=integer,JSONPath=`.status.targeted`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.available`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollout.phase`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Bundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BundleSpec   `json:"spec,omitempty"`
	Status BundleStatus `json:"status,omitempty"`
}

// BundleList is a list of Bundles.
// +kubebuilder:object:root=true
type BundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bundle `json:"items"`
}

func init() { SchemeBuilder.Register(&Bundle{}, &BundleList{}) }
