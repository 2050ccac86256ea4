package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition reasons of a GitRepository (its conditions are Ready and Stalled).
const (
	ReasonFetched          = "Fetched"              // the ref was resolved and its commit fetched
	ReasonFetchFailed      = "FetchFailed"          // the repository could not be reached or read; retried
	ReasonAuthFailed       = "AuthenticationFailed" // the credentials were refused
	ReasonRefNotFound      = "RefNotFound"          // no branch, tag or commit matches spec.ref
	ReasonInvalidSecret    = "InvalidSecret"        // spec.secretRef is missing or lacks the keys it needs
	ReasonHistoryRewritten = "HistoryRewritten"     // the branch moved to a commit that does not descend from the last one (force-push)
)

// GitReference says which commit of a repository to use. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() == 1",message="set exactly one of branch, tag, semver or commit"
type GitReference struct {
	// Branch to follow, e.g. main.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Branch string `json:"branch,omitempty"`
	// Tag to use, e.g. v1.4.0.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Tag string `json:"tag,omitempty"`
	// SemVer range over the repository's tags, e.g. ">=1.2.0 <2.0.0": the highest matching tag.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	SemVer string `json:"semver,omitempty"`
	// Commit SHA to pin.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{7,40}$`
	Commit string `json:"commit,omitempty"`
}

// GitRepositorySpec says where a repository is and how to read it.
type GitRepositorySpec struct {
	// URL of the repository: https://, http:// or ssh:// (also user@host:path).
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://.+|^[^@/]+@[^:]+:.+$`
	URL string `json:"url"`
	// Ref is the branch, tag, semver range or commit to use (default: branch main).
	// +optional
	Ref *GitReference `json:"ref,omitempty"`
	// Interval between fetches (default 5m). A webhook call fetches at once.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="interval must be at least 10s"
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Timeout of one fetch (default 60s).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be positive"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// SecretRef names a Secret in the same namespace with the credentials: `username` and
	// `password` (HTTPS basic auth; a token goes in `password`), or `bearerToken`, or
	// `identity` (an SSH private key) with `known_hosts`.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// Ignore lists paths (gitignore patterns) that are never read as content.
	// +optional
	// +listType=atomic
	Ignore []string `json:"ignore,omitempty"`
	// WebhookSecretRef names a Secret whose key `token` verifies webhook calls
	// (HMAC-SHA256 of the body, in the X-Hub-Signature-256 header). Without it the
	// repository's webhook is refused.
	// +optional
	WebhookSecretRef *LocalObjectReference `json:"webhookSecretRef,omitempty"`
}

// GitArtifact is what was fetched.
type GitArtifact struct {
	// Ref that was resolved, e.g. "main" or "v1.4.0".
	Ref string `json:"ref"`
	// Commit SHA it resolved to.
	Commit string `json:"commit"`
	// Message is the commit's subject line.
	// +optional
	Message string `json:"message,omitempty"`
	// Author of the commit.
	// +optional
	Author string `json:"author,omitempty"`
	// FetchedAt is when this commit was first fetched.
	FetchedAt metav1.Time `json:"fetchedAt"`
}

// GitRepositoryStatus is what the hub last fetched.
type GitRepositoryStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (the artifact is current), Stalled (a problem a retry cannot fix).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Artifact is the last commit fetched successfully. It stays when a later fetch fails, so
	// Bundles keep running the last good commit.
	// +optional
	Artifact *GitArtifact `json:"artifact,omitempty"`
	// LastFetchTime is when the hub last tried to fetch.
	// +optional
	LastFetchTime *metav1.Time `json:"lastFetchTime,omitempty"`
}

// GitRepository is a Git repository the hub fetches, as a source of Bundles.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitrepo,categories=flotilla
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.artifact.commit`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitRepositorySpec   `json:"spec,omitempty"`
	Status GitRepositoryStatus `json:"status,omitempty"`
}

// GitRepositoryList is a list of GitRepositories.
// +kubebuilder:object:root=true
type GitRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepository `json:"items"`
}

func init() { SchemeBuilder.Register(&GitRepository{}, &GitRepositoryList{}) }
