package bundle

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/render"
)

// sourceKey identifies the inputs of a render, so an unchanged Bundle is not re-rendered on
// every status event: its generation and the resourceVersions of its ConfigMaps, or the
// commit its GitRepository fetched (also returned, as "<ref>@<commit>").
func (r *Reconciler) sourceKey(ctx context.Context, b *flv1.Bundle) (string, string, error) {
	key := fmt.Sprintf("%s/%d", b.UID, b.Generation)
	if h := b.Spec.Source.Helm; h != nil {
		return r.helmSourceKey(ctx, b, key)
	}
	if b.Spec.Source.Git != nil {
		repo, err := r.gitRepositoryOf(ctx, b.Namespace, b.Spec.Source.Git)
		if err != nil {
			var se *StallError
			if errors.As(err, &se) {
				return key + "/git-not-ready", "", nil // loadGit says what is missing
			}
			return "", "", err
		}
		return key + "/" + repo.Spec.URL + "@" + repo.Status.Artifact.Commit, sourceRevisionOf(repo), nil
	}
	if b.Spec.Source.Inline == nil {
		return key, "", nil
	}
	for _, ref := range b.Spec.Source.Inline.ConfigMaps {
		v, err := r.versionOf(ctx, "ConfigMap", b.Namespace, ref.Name)
		if err != nil {
			return "", "", err
		}
		key += "/" + ref.Name + "@" + v
	}
	return key, "", nil
}

// versionOf is the resourceVersion of a ConfigMap or Secret, read as metadata from the cache
// ("missing" when it does not exist).
func (r *Reconciler) versionOf(ctx context.Context, kind, ns, name string) (string, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m)
	switch {
	case apierrors.IsNotFound(err):
		return "missing", nil
	case err != nil:
		return "", err
	}
	return m.ResourceVersion, nil
}

// helmSourceKey: the chart (its digest, or the Git commit of a chart directory) and the
// versions of the valuesFrom objects.
func (r *Reconciler) helmSourceKey(ctx context.Context, b *flv1.Bundle, key string) (string, string, error) {
	h := b.Spec.Source.Helm
	sourceRev := ""
	if h.Git != nil {
		repo, err := r.gitRepositoryOf(ctx, b.Namespace, h.Git)
		var se *StallError
		switch {
		case errors.As(err, &se):
			return key + "/git-not-ready", "", nil
		case err != nil:
			return "", "", err
		}
		key += "/" + repo.Spec.URL + "@" + repo.Status.Artifact.Commit
		sourceRev = sourceRevisionOf(repo)
	} else {
		c, err := r.helmChart(ctx, h)
		var se *StallError
		switch {
		case errors.As(err, &se):
			return key + "/chart-unavailable", "", nil // loadHelm says why
		case err != nil:
			return "", "", err
		}
		key += "/" + c.Digest
		sourceRev = c.Name + "@" + c.Version
	}
	for _, ref := range h.ValuesFrom {
		v, err := r.versionOf(ctx, ref.Kind, b.Namespace, ref.Name)
		if err != nil {
			return "", "", err
		}
		key += "/" + ref.Kind + ":" + ref.Name + "@" + v
	}
	return key, sourceRev, nil
}

// LoadSource reads a Bundle's objects, in order: inline resources, then each ConfigMap's
// keys in sorted order. Every error names where the bad input is. The CLI's diff calls it too.
func LoadSource(ctx context.Context, reader client.Reader, b *flv1.Bundle) ([]*unstructured.Unstructured, error) {
	in := b.Spec.Source.Inline
	if in == nil {
		return nil, stall(flv1.ReasonInvalidSource, "spec.source.inline is not set: a Bundle with a git or helm source is rendered from its source by the hub, not here")
	}
	var objs []*unstructured.Unstructured
	for i, raw := range in.Resources {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			return nil, stall(flv1.ReasonInvalidResource, "spec.source.inline.resources[%d]: %v", i, err)
		}
		objs = append(objs, u)
	}
	for _, ref := range in.ConfigMaps {
		cm := &corev1.ConfigMap{}
		err := reader.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: ref.Name}, cm)
		if apierrors.IsNotFound(err) {
			return nil, stall(flv1.ReasonInvalidSource, "ConfigMap %s/%s named in spec.source.inline.configMaps does not exist", b.Namespace, ref.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("read ConfigMap %s: %w", ref.Name, err)
		}
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.TrimSpace(cm.Data[k]) == "" {
				continue
			}
			docs, err := render.ParseYAML([]byte(cm.Data[k]))
			if err != nil {
				return nil, stall(flv1.ReasonInvalidSource, "ConfigMap %s key %s: %v", ref.Name, k, err)
			}
			objs = append(objs, docs...)
		}
	}
	return objs, nil
}

// configMapIndex indexes Bundles by the ConfigMaps they read, so a ConfigMap change reaches them.
const configMapIndex = "spec.source.inline.configMaps"

func indexConfigMaps(o client.Object) []string {
	b, ok := o.(*flv1.Bundle)
	if !ok || b.Spec.Source.Inline == nil {
		return nil
	}
	var out []string
	for _, ref := range b.Spec.Source.Inline.ConfigMaps {
		out = append(out, ref.Name)
	}
	return out
}
