package bundle

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/content"
)

// chunkName derives a chunk's name from the content hash with the hub's secret key. Agents
// may get chunks by name but not list them; a name they were not given cannot be guessed,
// not even by someone who knows the content.
func (r *Reconciler) chunkName(b *flv1.Bundle, hash string, i int) string {
	m := hmac.New(sha256.New, r.ContentKey)
	fmt.Fprintf(m, "%s\n%s", b.UID, hash)
	return fmt.Sprintf("c%s-%d", hex.EncodeToString(m.Sum(nil))[:40], i)
}

// storeContent writes enc's chunks (idempotently: a chunk that exists is the same bytes)
// and returns the reference a Work or revision carries.
func (r *Reconciler) storeContent(ctx context.Context, b *flv1.Bundle, enc *content.Encoded) (flv1.ContentReference, error) {
	ref := flv1.ContentReference{Hash: enc.Hash, Size: int64(enc.Size), Objects: int32(enc.Objects)}
	for i, data := range enc.Chunks {
		name := r.chunkName(b, enc.Hash, i)
		ref.Chunks = append(ref.Chunks, name)
		if _, ok := r.stored.Load(name); ok {
			continue
		}
		c := &flv1.ContentChunk{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: flv1.ContentNamespace, Labels: map[string]string{
				flv1.LabelBundleUID: string(b.UID), flv1.LabelBundleNamespace: b.Namespace, flv1.LabelBundleName: b.Name,
			}},
			Hash: enc.Hash, Index: int32(i), Data: data,
		}
		if err := r.Client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
			return ref, stall(flv1.ReasonStorageFailed, "store content chunk %d of %d: %v", i+1, len(enc.Chunks), err)
		}
		r.stored.Store(name, true)
	}
	return ref, nil
}

// ensureRevision stores the plan's base, its variants and the BundleRevision naming them.
// The revision's spec never changes; variants the revision lacks (clusters with new label
// combinations) are added to its status. It returns the content reference per variant.
func (r *Reconciler) ensureRevision(ctx context.Context, b *flv1.Bundle, p *Plan) (*flv1.BundleRevision, map[*Variant]flv1.ContentReference, error) {
	name := RevisionName(b.Name, p.Hash)
	rev := &flv1.BundleRevision{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: name}, rev)
	if apierrors.IsNotFound(err) {
		baseRef, err := r.storeContent(ctx, b, p.Base)
		if err != nil {
			return nil, nil, err
		}
		rev = &flv1.BundleRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Namespace,
				Labels:          map[string]string{flv1.LabelBundleName: b.Name, flv1.LabelBundleUID: string(b.UID)},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, flv1.GroupVersion.WithKind("Bundle"))}},
			Spec: flv1.BundleRevisionSpec{Bundle: b.Name, Hash: p.Hash, BundleGeneration: b.Generation, SourceRevision: p.SourceRevision,
				Base: baseRef, Overrides: b.Spec.Overrides},
		}
		if err := r.Client.Create(ctx, rev); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, stall(flv1.ReasonStorageFailed, "store revision %s: %v", name, err)
		}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rev), rev); err != nil {
			// The cache may not have it yet: continue with what was created.
			if !apierrors.IsNotFound(err) {
				return nil, nil, err
			}
		}
	} else if err != nil {
		return nil, nil, err
	}
	refs := map[*Variant]flv1.ContentReference{}
	known := map[string]flv1.ContentReference{}
	for _, v := range rev.Status.Variants {
		known[v.Content.Hash] = v.Content
	}
	added := false
	for _, v := range p.Variants {
		if ref, ok := known[v.Content.Hash]; ok {
			refs[v] = ref
			continue
		}
		ref, err := r.storeContent(ctx, b, v.Content)
		if err != nil {
			return nil, nil, err
		}
		refs[v] = ref
		known[v.Content.Hash] = ref
		rev.Status.Variants = append(rev.Status.Variants, flv1.RevisionVariant{Overrides: v.Rules, Content: ref})
		added = true
	}
	if added {
		if err := r.Client.Status().Update(ctx, rev); err != nil {
			return nil, nil, err
		}
	}
	return rev, refs, nil
}

// pruneHistory deletes revisions beyond the history limit, oldest first, never one in keep
// nor one a Work still asks for, and the chunks only they used.
func (r *Reconciler) pruneHistory(ctx context.Context, b *flv1.Bundle, keep []string, works []flv1.Work) error {
	limit := 10
	if b.Spec.RevisionHistoryLimit != nil {
		limit = int(*b.Spec.RevisionHistoryLimit)
	}
	list := &flv1.BundleRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(b.Namespace), client.MatchingLabels{flv1.LabelBundleUID: string(b.UID)}); err != nil {
		return err
	}
	if len(list.Items) <= limit {
		return nil
	}
	inUse := map[string]bool{}
	for _, k := range keep {
		inUse[k] = true
	}
	for i := range works {
		inUse[works[i].Spec.Revision] = true
	}
	revs := list.Items
	sort.Slice(revs, func(i, j int) bool {
		return revs[i].CreationTimestamp.Before(&revs[j].CreationTimestamp) ||
			(revs[i].CreationTimestamp.Equal(&revs[j].CreationTimestamp) && revs[i].Name < revs[j].Name)
	})
	kept := map[string]bool{}
	var drop []*flv1.BundleRevision
	for i := range revs {
		if inUse[revs[i].Name] || len(revs)-i <= limit {
			kept[revs[i].Name] = true
		} else {
			drop = append(drop, &revs[i])
		}
	}
	if len(drop) == 0 {
		return nil
	}
	keptChunks := map[string]bool{}
	for i := range revs {
		if kept[revs[i].Name] {
			for _, c := range revisionChunks(&revs[i]) {
				keptChunks[c] = true
			}
		}
	}
	for _, rev := range drop {
		for _, c := range revisionChunks(rev) {
			if keptChunks[c] {
				continue
			}
			err := r.Client.Delete(ctx, &flv1.ContentChunk{ObjectMeta: metav1.ObjectMeta{Namespace: flv1.ContentNamespace, Name: c}})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			r.stored.Delete(c)
		}
		if err := r.Client.Delete(ctx, rev); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func revisionChunks(rev *flv1.BundleRevision) []string {
	out := slices.Clone(rev.Spec.Base.Chunks)
	for _, v := range rev.Status.Variants {
		out = append(out, v.Content.Chunks...)
	}
	return out
}
