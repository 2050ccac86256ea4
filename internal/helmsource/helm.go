// Package helmsource fetches Helm charts from HTTP chart repositories and renders them with
// the Helm v4 SDK, client-side, as a Bundle's content: the objects a `helm template` would
// print, CRDs first. Nothing is installed and no cluster is contacted.
package helmsource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/internal/render"
)

// MaxChartBytes bounds a chart archive or an index download.
const MaxChartBytes = 32 << 20

// Chart is a downloaded chart archive.
type Chart struct {
	Name, Version string
	// Archive is the .tgz as served; Digest its SHA-256.
	Archive []byte
	Digest  string
}

// Fetch resolves version (an exact version or a semver range; "" is the newest) of chart name
// in the repository at repoURL, downloads it and checks its digest against the index.
func Fetch(ctx context.Context, c *http.Client, repoURL, name, version string) (*Chart, error) {
	base, err := url.Parse(strings.TrimSuffix(repoURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("chart repository URL %q: %w", repoURL, err)
	}
	raw, err := get(ctx, c, base.ResolveReference(&url.URL{Path: "index.yaml"}).String())
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: %w", repoURL, err)
	}
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(raw, idx); err != nil {
		return nil, fmt.Errorf("chart repository %s: index.yaml: %w", repoURL, err)
	}
	idx.SortEntries()
	cv, err := idx.Get(name, version)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s in %s: %w (available: %s)", name, orNewest(version), repoURL, err, versions(idx, name))
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s %s in %s has no download URL", name, cv.Version, repoURL)
	}
	u, err := url.Parse(cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: URL %q: %w", name, cv.Version, cv.URLs[0], err)
	}
	archive, err := get(ctx, c, base.ResolveReference(u).String())
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", name, cv.Version, err)
	}
	sum := sha256.Sum256(archive)
	digest := hex.EncodeToString(sum[:])
	if cv.Digest != "" && cv.Digest != digest {
		return nil, fmt.Errorf("chart %s %s: digest %s does not match the index's %s", name, cv.Version, digest, cv.Digest)
	}
	return &Chart{Name: name, Version: cv.Version, Archive: archive, Digest: digest}, nil
}

func orNewest(v string) string {
	if v == "" {
		return "(newest)"
	}
	return v
}

func versions(idx *repo.IndexFile, name string) string {
	var out []string
	for _, cv := range idx.Entries[name] {
		out = append(out, cv.Version)
	}
	if len(out) == 0 {
		return "no such chart"
	}
	return strings.Join(out, ", ")
}

func get(ctx context.Context, c *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxChartBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxChartBytes {
		return nil, fmt.Errorf("GET %s: more than %d MiB", u, MaxChartBytes>>20)
	}
	return b, nil
}

// Render renders a chart archive as release name into namespace with values merged over
// the chart's defaults, and returns its objects: CRDs (from crds/) first, then the
// templates' manifests in template path order. Notes, partials and empty documents are
// left out.
func Render(archive []byte, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	return renderChart(ch, release, namespace, values)
}

// RenderFiles renders a chart given as files (a chart directory in Git), paths relative to
// the chart's root.
func RenderFiles(files map[string][]byte, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	var bf []*archive.BufferedFile
	for p, data := range files {
		bf = append(bf, &archive.BufferedFile{Name: p, Data: data})
	}
	ch, err := loader.LoadFiles(bf)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	return renderChart(ch, release, namespace, values)
}

func renderChart(ch *chart.Chart, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	if values == nil {
		values = map[string]any{}
	}
	vals, err := commonutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1},
		common.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart %s: values: %w", ch.Name(), err)
	}
	out, err := engine.Engine{}.RenderWithContext(context.Background(), ch, vals)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", ch.Name(), err)
	}
	var objs []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		docs, err := render.ParseYAML(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", ch.Name(), crd.Filename, err)
		}
		objs = append(objs, docs...)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") || strings.HasSuffix(n, "NOTES.txt") || strings.TrimSpace(out[n]) == "" {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		docs, err := render.ParseYAML([]byte(out[n]))
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", ch.Name(), n, err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}
