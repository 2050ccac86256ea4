package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub"
)

// TestAgentReadsOnlyContentItsWorksName: content is stored once for the fleet, in
// flotilla-content. An agent may get the chunks its own Works name, but cannot list chunks,
// cannot read another cluster's Works, and cannot fetch a chunk by the content hash (which
// anyone who knows the content could compute): chunk names are keyed with a hub secret.
func TestAgentReadsOnlyContentItsWorksName(t *testing.T) {
	ctx := context.Background()
	a, b := ensureJoined(t, 0), ensureJoined(t, 2)
	createBundle(t, "team-secret", "only-b", []string{b}, nil, configMapObj("b-only", map[string]any{"token": "for-b"}))
	createBundle(t, "team-secret", "only-a", []string{a}, nil, configMapObj("a-only", map[string]any{"v": "a"}))
	waitBundle(t, "team-secret", "only-b", 60*time.Second, "only-b ready", bundleReady(1))
	waitBundle(t, "team-secret", "only-a", 60*time.Second, "only-a ready", bundleReady(1))
	bWork := getWork(t, b, "team-secret", "only-b")
	aWork := getWork(t, a, "team-secret", "only-a")

	c, err := client.NewWithWatch(tokenConfig(agentToken(t, 0)), client.Options{Scheme: hub.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// Allowed, so the refusals below are about RBAC: its own Work and the chunks it names.
	if err := c.Get(ctx, client.ObjectKeyFromObject(aWork), &flv1.Work{}); err != nil {
		t.Fatalf("agent A cannot read its own Work: %v", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: flv1.ContentNamespace, Name: aWork.Spec.Content.Chunks[0]}, &flv1.ContentChunk{}); err != nil {
		t.Fatalf("agent A cannot get the chunk its Work names: %v", err)
	}
	for _, f := range []struct {
		what string
		do   func() error
	}{
		{"list content chunks", func() error { return c.List(ctx, &flv1.ContentChunkList{}, client.InNamespace(flv1.ContentNamespace)) }},
		{"watch content chunks", func() error {
			w, err := c.Watch(ctx, &flv1.ContentChunkList{}, client.InNamespace(flv1.ContentNamespace))
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{"read B's Work", func() error { return c.Get(ctx, client.ObjectKeyFromObject(bWork), &flv1.Work{}) }},
		{"list Works in B's namespace", func() error { return c.List(ctx, &flv1.WorkList{}, client.InNamespace(bWork.Namespace)) }},
		{"read the BundleRevision", func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: "team-secret", Name: bWork.Spec.Revision}, &flv1.BundleRevision{})
		}},
		{"read the Bundle", func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: "team-secret", Name: "only-b"}, &flv1.Bundle{})
		}},
	} {
		if err := f.do(); !apierrors.IsForbidden(err) {
			t.Errorf("agent of %s may %s: want 403, got %v", a, f.what, err)
		}
	}
	// Guessing: by the content hash it gets nothing (no such object), never B's content.
	err = c.Get(ctx, types.NamespacedName{Namespace: flv1.ContentNamespace, Name: bWork.Spec.Content.Hash}, &flv1.ContentChunk{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get by content hash: want 404, got %v", err)
	}
	if bWork.Spec.Content.Chunks[0] == bWork.Spec.Content.Hash || len(bWork.Spec.Content.Chunks[0]) < 40 {
		t.Errorf("chunk name %q is derivable from the hash", bWork.Spec.Content.Chunks[0])
	}
}
