package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/helmsource"
)

// HelmRecheck is how long a fetched chart serves a Bundle before its version (a range) is
// resolved again: a new matching version is noticed within this time.
const HelmRecheck = 5 * time.Minute

// helmEntry is a fetched chart and when.
type helmEntry struct {
	chart *helmsource.Chart
	at    time.Time
}

var helmHTTP = &http.Client{Timeout: 60 * time.Second}

// helmChart fetches (or reuses) the chart of a Bundle's repository source.
func (r *Reconciler) helmChart(ctx context.Context, src *flv1.HelmSource) (*helmsource.Chart, error) {
	key := src.Repository + "|" + src.Chart + "|" + src.Version
	if e, ok := r.charts.Load(key); ok && time.Since(e.(helmEntry).at) < HelmRecheck {
		return e.(helmEntry).chart, nil
	}
	c, err := helmsource.Fetch(ctx, helmHTTP, src.Repository, src.Chart, src.Version)
	if err != nil {
		return nil, stall(flv1.ReasonHelmFailed, "%v", err)
	}
	r.charts.Store(key, helmEntry{chart: c, at: time.Now()})
	return c, nil
}

// helmValues merges valuesFrom (in order) and then values.
func (r *Reconciler) helmValues(ctx context.Context, b *flv1.Bundle) (map[string]any, error) {
	src := b.Spec.Source.Helm
	vals := map[string]any{}
	for _, ref := range src.ValuesFrom {
		key := ref.Key
		if key == "" {
			key = "values.yaml"
		}
		var data []byte
		switch ref.Kind {
		case "Secret":
			s := &corev1.Secret{}
			if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: ref.Name}, s); err != nil {
				return nil, stall(flv1.ReasonInvalidSource, "valuesFrom Secret %s: %v", ref.Name, err)
			}
			data = s.Data[key]
		default:
			cm := &corev1.ConfigMap{}
			if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: ref.Name}, cm); err != nil {
				return nil, stall(flv1.ReasonInvalidSource, "valuesFrom ConfigMap %s: %v", ref.Name, err)
			}
			data = []byte(cm.Data[key])
		}
		if len(data) == 0 {
			return nil, stall(flv1.ReasonInvalidSource, "valuesFrom %s %s has no key %s", ref.Kind, ref.Name, key)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, stall(flv1.ReasonInvalidSource, "valuesFrom %s %s key %s: %v", ref.Kind, ref.Name, key, err)
		}
		vals = mergeValues(vals, m)
	}
	if src.Values != nil {
		m := map[string]any{}
		if err := json.Unmarshal(src.Values.Raw, &m); err != nil {
			return nil, stall(flv1.ReasonInvalidSource, "spec.source.helm.values: %v", err)
		}
		vals = mergeValues(vals, m)
	}
	return vals, nil
}

// mergeValues merges b over a, maps recursively (Helm's coalescing of values files).
func mergeValues(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// loadHelm renders a Helm source with its values. It returns the objects and how to render
// again with per-cluster values.
func (r *Reconciler) loadHelm(ctx context.Context, b *flv1.Bundle) ([]*unstructured.Unstructured, Rerender, error) {
	src := b.Spec.Source.Helm
	vals, err := r.helmValues(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	release := src.ReleaseName
	if release == "" {
		release = b.Name
	}
	ns := b.Spec.TargetNamespace
	var renderWith func(map[string]any) ([]*unstructured.Unstructured, error)
	var sourceRev string
	if src.Git != nil {
		repo, err := r.gitRepositoryOf(ctx, b.Namespace, src.Git)
		if err != nil {
			return nil, nil, err
		}
		dir := strings.Trim(path.Clean("/"+src.Git.Path), "/")
		files, err := r.Git.Files(repo.Spec.URL, repo.Status.Artifact.Commit, dir, repo.Spec.Ignore)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s at %s: %w", repo.Name, repo.Status.Artifact.Commit, err)
		}
		rel := map[string][]byte{}
		for p, data := range files {
			rel[strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")] = data
		}
		sourceRev = sourceRevisionOf(repo)
		renderWith = func(v map[string]any) ([]*unstructured.Unstructured, error) {
			return helmsource.RenderFiles(rel, release, ns, v)
		}
	} else {
		c, err := r.helmChart(ctx, src)
		if err != nil {
			return nil, nil, err
		}
		sourceRev = c.Name + "@" + c.Version
		renderWith = func(v map[string]any) ([]*unstructured.Unstructured, error) {
			return helmsource.Render(c.Archive, release, ns, v)
		}
	}
	objs, err := renderWith(vals)
	if err != nil {
		return nil, nil, stall(flv1.ReasonHelmFailed, "%s: %v", sourceRev, err)
	}
	rerender := func(extra []map[string]any) ([]*unstructured.Unstructured, error) {
		v := vals
		for _, e := range extra {
			v = mergeValues(v, e)
		}
		return renderWith(v)
	}
	return objs, rerender, nil
}
