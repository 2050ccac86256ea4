package bundle

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/content"
	"flotilla.dev/flotilla/internal/render"
)

// variantOf returns the content of one cluster's variant of a stored revision that is not
// the Bundle's current one (a rollout keeps or returns clusters there), and the revision's
// source revision. A revision holds its base and override rules, so a variant it lacks (a
// cluster with a new label set) is rendered from the revision itself, never from the Bundle
// as it is now.
func (r *Reconciler) variantOf(ctx context.Context, b *flv1.Bundle, name string, mc *flv1.MemberCluster) (flv1.ContentReference, string, error) {
	rev := &flv1.BundleRevision{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: name}, rev); err != nil {
		return flv1.ContentReference{}, "", fmt.Errorf("revision %s for cluster %s: %w", name, mc.Name, err)
	}
	ref, err := r.variantContent(ctx, b, rev, mc)
	return ref, rev.Spec.SourceRevision, err
}

func (r *Reconciler) variantContent(ctx context.Context, b *flv1.Bundle, rev *flv1.BundleRevision, mc *flv1.MemberCluster) (flv1.ContentReference, error) {
	name := rev.Name
	matching, err := render.MatchingRules(rev.Spec.Overrides, mc.Labels)
	if err != nil {
		return flv1.ContentReference{}, fmt.Errorf("revision %s for cluster %s: %w", name, mc.Name, err)
	}
	var rules []string
	helmValues := false
	for _, i := range matching {
		rules = append(rules, rev.Spec.Overrides[i].Name)
		helmValues = helmValues || rev.Spec.Overrides[i].HelmValues != nil
	}
	for _, v := range rev.Status.Variants {
		if slices.Equal(v.Overrides, rules) {
			return v.Content, nil
		}
	}
	if helmValues {
		// Per-cluster Helm values need the chart, which a stored revision does not keep.
		return flv1.ContentReference{}, fmt.Errorf("revision %s has no variant for cluster %s's labels, and its helmValues overrides "+
			"cannot be rendered from the stored revision; it can run there once a new revision is rolled out", name, mc.Name)
	}
	objs, err := r.loadContent(ctx, rev.Spec.Base)
	if err != nil {
		return flv1.ContentReference{}, fmt.Errorf("revision %s: %w", name, err)
	}
	plan, err := Render(objs, rev.Spec.Overrides, []*flv1.MemberCluster{mc})
	if err != nil {
		return flv1.ContentReference{}, fmt.Errorf("revision %s for cluster %s: %w", name, mc.Name, err)
	}
	if RevisionName(b.Name, plan.Hash) != name {
		return flv1.ContentReference{}, fmt.Errorf("revision %s re-renders as %s: its stored content changed", name, RevisionName(b.Name, plan.Hash))
	}
	_, refs, err := r.ensureRevision(ctx, b, plan)
	if err != nil {
		return flv1.ContentReference{}, err
	}
	return refs[plan.ByCluster[mc.Name]], nil
}

// loadContent reads and verifies stored content. Chunks are read uncached: the hub never
// holds every revision's content in memory.
func (r *Reconciler) loadContent(ctx context.Context, ref flv1.ContentReference) ([]*unstructured.Unstructured, error) {
	chunks := make([][]byte, len(ref.Chunks))
	for i, name := range ref.Chunks {
		c := &flv1.ContentChunk{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: flv1.ContentNamespace, Name: name}, c); err != nil {
			return nil, fmt.Errorf("content chunk %d of %d: %w", i+1, len(ref.Chunks), err)
		}
		chunks[i] = c.Data
	}
	return content.Decode(chunks, ref.Hash)
}
