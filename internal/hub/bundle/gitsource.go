package bundle

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/render"
)

// kustomizationFiles are the names that make a directory a Kustomize overlay.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// gitRepositoryOf returns the GitRepository a git source (of a Bundle in ns) reads, once it
// has fetched a commit, or a StallError saying what to wait for or fix.
func (r *Reconciler) gitRepositoryOf(ctx context.Context, ns string, src *flv1.GitSource) (*flv1.GitRepository, error) {
	repo := &flv1.GitRepository{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.Repository.Name}, repo); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, stall(flv1.ReasonSourceNotReady, "GitRepository %s/%s named in the Bundle's source does not exist", ns, src.Repository.Name)
		}
		return nil, err
	}
	if repo.Status.Artifact == nil {
		return nil, stall(flv1.ReasonSourceNotReady, "GitRepository %s has not fetched a commit yet: %s", repo.Name, readyMessage(repo))
	}
	return repo, nil
}

func readyMessage(repo *flv1.GitRepository) string {
	for _, c := range repo.Status.Conditions {
		if c.Type == flv1.ConditionReady {
			return c.Message
		}
	}
	return "no status yet"
}

// sourceRevisionOf is "<ref>@<commit>" of the artifact a git-sourced Bundle renders.
func sourceRevisionOf(repo *flv1.GitRepository) string {
	return repo.Status.Artifact.Ref + "@" + repo.Status.Artifact.Commit
}

// loadGit reads a Bundle's objects from its GitRepository's fetched commit: the Kustomize
// build of the path when it holds a kustomization, else its YAML and JSON files.
func (r *Reconciler) loadGit(ctx context.Context, b *flv1.Bundle) ([]*unstructured.Unstructured, error) {
	repo, err := r.gitRepositoryOf(ctx, b.Namespace, b.Spec.Source.Git)
	if err != nil {
		return nil, err
	}
	dir := strings.Trim(path.Clean("/"+b.Spec.Source.Git.Path), "/")
	art := repo.Status.Artifact
	// Kustomize overlays refer to bases elsewhere in the repository: read the whole tree then.
	files, err := r.Git.Files(repo.Spec.URL, art.Commit, "", repo.Spec.Ignore)
	if err != nil {
		// The hub's cache lost the commit (a restarted hub): the GitRepository controller
		// fetches it again at start; retry until then.
		return nil, fmt.Errorf("read %s at %s: %w", repo.Name, art.Commit, err)
	}
	return objectsAt(files, dir, fmt.Sprintf("%s@%s", repo.Name, art.Commit[:12]))
}

// objectsAt renders the directory dir of a file tree: Kustomize when dir holds a
// kustomization, else the YAML and JSON files below dir. where names the tree in errors.
func objectsAt(files map[string][]byte, dir, where string) ([]*unstructured.Unstructured, error) {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	for _, k := range kustomizationFiles {
		if _, ok := files[prefix+k]; ok {
			return kustomize(files, dir, where)
		}
	}
	var names []string
	for p := range files {
		if strings.HasPrefix(p, prefix) && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json")) {
			names = append(names, p)
		}
	}
	if len(names) == 0 {
		return nil, stall(flv1.ReasonInvalidSource, "%s: no .yaml, .yml or .json file below %q", where, orRoot(dir))
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, p := range names {
		docs, err := render.ParseYAML(files[p])
		if err != nil {
			return nil, stall(flv1.ReasonInvalidSource, "%s: %s: %v", where, p, err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// kustomize builds dir with the Kustomize library, in memory, with no network access (remote
// bases are refused) and no plugins.
func kustomize(files map[string][]byte, dir, where string) ([]*unstructured.Unstructured, error) {
	fs := filesys.MakeFsInMemory()
	for p, data := range files {
		if err := fs.MkdirAll(path.Dir("/" + p)); err != nil {
			return nil, err
		}
		if err := fs.WriteFile("/"+p, data); err != nil {
			return nil, err
		}
	}
	opts := krusty.MakeDefaultOptions()
	res, err := krusty.MakeKustomizer(opts).Run(fs, "/"+dir)
	if err != nil {
		return nil, stall(flv1.ReasonKustomizeFailed, "%s: kustomize build %s: %v", where, orRoot(dir), err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, stall(flv1.ReasonKustomizeFailed, "%s: kustomize build %s: %v", where, orRoot(dir), err)
	}
	objs, err := render.ParseYAML(out)
	if err != nil {
		return nil, stall(flv1.ReasonKustomizeFailed, "%s: kustomize output: %v", where, err)
	}
	return objs, nil
}

func orRoot(dir string) string {
	if dir == "" {
		return "the repository root"
	}
	return dir
}

// gitRepositoryIndex indexes Bundles by the GitRepository they read.
const gitRepositoryIndex = "spec.source.git.repository"

func indexGitRepositories(o client.Object) []string {
	b, ok := o.(*flv1.Bundle)
	if !ok {
		return nil
	}
	switch {
	case b.Spec.Source.Git != nil:
		return []string{b.Spec.Source.Git.Repository.Name}
	case b.Spec.Source.Helm != nil && b.Spec.Source.Helm.Git != nil:
		return []string{b.Spec.Source.Helm.Git.Repository.Name}
	}
	return nil
}
