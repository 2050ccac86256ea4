package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ContentReference points at one rendering's content: chunks in the flotilla-content
// namespace, joined in order, gunzipped, and checked against Hash.
type ContentReference struct {
	// Hash is the hex SHA-256 of the canonical uncompressed content.
	Hash string `json:"hash"`
	// Chunks are the ContentChunk names, in order.
	// +listType=atomic
	Chunks []string `json:"chunks"`
	// Size of the uncompressed content in bytes.
	Size int64 `json:"size"`
	// Objects in the content.
	Objects int32 `json:"objects"`
}

// RevisionVariant is one rendering of a revision: what the clusters matching exactly these
// override rules run.
type RevisionVariant struct {
	// Overrides are the names of the matching rules, in order; empty for the base.
	// +optional
	// +listType=atomic
	Overrides []string         `json:"overrides,omitempty"`
	Content   ContentReference `json:"content"`
}

// BundleRevisionSpec is an immutable snapshot of a Bundle's inputs: the rendered source and
// the override rules. Any cluster's content at this revision can be rendered from it, also
// for clusters that join later (rollback never depends on the Bundle as it is now).
type BundleRevisionSpec struct {
	// Bundle is the name of the Bundle (same namespace).
	Bundle string `json:"bundle"`
	// Hash identifies the revision: SHA-256 over the base content hash and the overrides.
	Hash string `json:"hash"`
	// BundleGeneration is the Bundle's generation it was rendered from.
	BundleGeneration int64 `json:"bundleGeneration"`
	// Base is the source's content before overrides.
	Base ContentReference `json:"base"`
	// SourceRevision is where the content was first rendered from ("<ref>@<commit>" for a
	// git source; empty for inline). A later commit rendering the same content keeps this
	// revision, so this is the commit that introduced it.
	// +optional
	SourceRevision string `json:"sourceRevision,omitempty"`
	// Overrides are the Bundle's override rules at this revision.
	// +optional
	// +listType=atomic
	Overrides []OverrideRule `json:"overrides,omitempty"`
}

// BundleRevisionStatus records the variants rendered so far. It only grows: a variant, once
// stored, never changes.
type BundleRevisionStatus struct {
	// Variants rendered for the clusters placed so far.
	// +optional
	// +listType=atomic
	Variants []RevisionVariant `json:"variants,omitempty"`
}

// BundleRevision is an immutable, content-addressed snapshot of a Bundle, kept (up to the
// Bundle's revisionHistoryLimit) so that any Work can be moved back to it at once.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=brev,categories=flotilla
// +kubebuilder:validation:XValidation:rule="self.spec == oldSelf.spec",message="a BundleRevision is immutable"
// +kubebuilder:printcolumn:name="Bundle",type=string,JSONPath=`.spec.bundle`
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.spec.bundleGeneration`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.spec.base.objects`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.base.size`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BundleRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BundleRevisionSpec   `json:"spec"`
	Status            BundleRevisionStatus `json:"status,omitempty"`
}

// BundleRevisionList is a list of BundleRevisions.
// +kubebuilder:object:root=true
type BundleRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BundleRevision `json:"items"`
}

// ContentChunk holds part of one rendering's compressed content. Chunks live in the
// flotilla-content namespace under names derived from the content hash with a hub secret,
// so an agent can fetch a chunk its Work names but cannot guess another.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=flotilla
// +kubebuilder:validation:XValidation:rule="self.data == oldSelf.data",message="a ContentChunk is immutable"
// +kubebuilder:printcolumn:name="Hash",type=string,JSONPath=`.hash`
// +kubebuilder:printcolumn:name="Index",type=integer,JSONPath=`.index`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ContentChunk struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Hash of the whole content this chunk is part of.
	Hash string `json:"hash"`
	// Index of this chunk, from 0.
	Index int32 `json:"index"`
	// Data: gzip-compressed bytes.
	Data []byte `json:"data"`
}

// ContentChunkList is a list of ContentChunks.
// +kubebuilder:object:root=true
type ContentChunkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContentChunk `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BundleRevision{}, &BundleRevisionList{}, &ContentChunk{}, &ContentChunkList{})
}
