package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/content"
	"flotilla.dev/flotilla/internal/hub/bundle"
	"flotilla.dev/flotilla/internal/placement"
	"flotilla.dev/flotilla/internal/render"
)

// exitError ends the process with a code and no message: diff's "there are differences".
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
func (e exitError) ExitCode() int { return e.code }

// ExitCode is the process exit code for err: 0 for nil, the code of an exitError, else 1.
func ExitCode(err error) (code int, silent bool) {
	var e exitError
	if errors.As(err, &e) {
		return e.code, true
	}
	if err != nil {
		return 1, false
	}
	return 0, true
}

func newDiffCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "diff", Short: "Show what would change on a cluster"}
	var namespace, cluster, file string
	b := &cobra.Command{
		Use:     "bundle NAME --cluster CLUSTER [-f FILE]",
		Aliases: []string{"bundles", "bdl"},
		Short:   "Show what a Bundle would change on one cluster",
		Long: `Compare what a cluster runs of a Bundle (the content its agent last applied) with what it
would run, object by object, as unified diffs of the rendered YAML with the cluster's
overrides and variables applied:

  without -f  what it would run is the Bundle's current revision as placed on that cluster
              (differences mean the cluster has not caught up yet);
  with -f     what it would run is the Bundle in FILE, rendered now for that cluster, before
              you apply it (ConfigMaps the Bundle reads are taken from FILE when they are in
              it, else from the hub).

Drift the agent reports on the cluster (someone changed a delivered object) is listed after
the diff. Everything is read from the hub; no credentials for the member are needed.

Exit status: 0 when nothing would change, 1 when something would, 2 on error (as kubectl diff).`,
		Example: `  flotilla diff bundle web -n team-web --cluster prod-eu-1
  flotilla diff bundle web -n team-web --cluster prod-eu-1 -f web-bundle.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed, err := runDiff(cmd.Context(), g, cmd.OutOrStdout(), g.namespaceOr(namespace), args[0], cluster, file, cmd.InOrStdin())
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "error:", err)
				return exitError{2}
			}
			if changed {
				return exitError{1}
			}
			return nil
		},
	}
	b.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundle")
	b.Flags().StringVar(&cluster, "cluster", "", "the member cluster (required)")
	b.Flags().StringVarP(&file, "filename", "f", "", `a file holding the Bundle as you would apply it ("-" for stdin)`)
	cmd.AddCommand(b)
	return cmd
}

// runDiff prints the diff and reports whether anything would change.
func runDiff(ctx context.Context, g *globals, out io.Writer, ns, name, cluster, file string, stdin io.Reader) (bool, error) {
	if cluster == "" {
		return false, fmt.Errorf("name the cluster with --cluster")
	}
	c, _, err := g.hubClient()
	if err != nil {
		return false, err
	}
	mc := &flv1.MemberCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
		return false, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	var b *flv1.Bundle
	var reader client.Reader = c
	if file != "" {
		if b, reader, err = bundleFromFile(file, stdin, ns, name, c); err != nil {
			return false, err
		}
	} else {
		b = &flv1.Bundle{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
			return false, fmt.Errorf("bundle %s/%s: %w", ns, name, err)
		}
	}
	w := &flv1.Work{}
	err = c.Get(ctx, types.NamespacedName{Namespace: flv1.ClusterNamespace(cluster), Name: flv1.WorkName(ns, name)}, w)
	if apierrors.IsNotFound(err) {
		w = nil
	} else if err != nil {
		return false, fmt.Errorf("the Bundle's Work on %s: %w", cluster, err)
	}

	// What the cluster runs: the content its agent last applied.
	var running []*unstructured.Unstructured
	fromLabel := cluster + ": nothing yet"
	if w != nil && w.Status.AppliedHash != "" {
		live := &flv1.Bundle{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, live); err != nil {
			return false, fmt.Errorf("bundle %s/%s: %w", ns, name, err)
		}
		objs, err := contentByHash(ctx, c, live.UID, w.Status.AppliedHash, w.Spec.Content)
		if err != nil {
			return false, fmt.Errorf("what %s runs (revision %s): %w", cluster, w.Status.AppliedRevision, err)
		}
		if running, err = withVariables(objs, w.Spec.Variables); err != nil {
			return false, err
		}
		fromLabel = fmt.Sprintf("%s: running (revision %s)", cluster, w.Status.AppliedRevision)
	}

	// What it would run.
	var desired []*unstructured.Unstructured
	var toLabel string
	placed := true
	if file != "" {
		desired, placed, err = renderForCluster(ctx, reader, b, mc)
		if err != nil {
			return false, err
		}
		toLabel = fmt.Sprintf("%s: would run (%s)", cluster, file)
	} else if w != nil {
		objs, err := contentByHash(ctx, c, b.UID, w.Spec.Content.Hash, w.Spec.Content)
		if err != nil {
			return false, fmt.Errorf("revision %s: %w", w.Spec.Revision, err)
		}
		if desired, err = withVariables(objs, w.Spec.Variables); err != nil {
			return false, err
		}
		toLabel = fmt.Sprintf("%s: would run (revision %s)", cluster, w.Spec.Revision)
	} else {
		placed = false
	}
	if !placed {
		toLabel = fmt.Sprintf("%s: not placed", cluster)
		fmt.Fprintf(out, "The Bundle does not place %s%s.\n", cluster, map[bool]string{true: " (with the Bundle in " + file + ")", false: ""}[file != ""])
	}
	remove := b.Spec.Apply.PruneEnabled()
	if !placed {
		remove = b.Spec.Apply.DeletionPolicy != flv1.DeletionOrphan
	}
	changes, err := diffObjects(running, desired, b.Spec.TargetNamespace, fromLabel, toLabel, remove)
	if err != nil {
		return false, err
	}
	changed := false
	for _, ch := range changes {
		if ch.Change == changeUnchanged {
			continue
		}
		changed = changed || ch.Change != changeOrphan
		fmt.Fprintf(out, "%s: %s\n", ch.Key, ch.Change)
		if ch.Diff != "" {
			fmt.Fprintln(out, indent(ch.Diff, "  "))
		}
	}
	drifted := printReportedDrift(out, w, cluster)
	fmt.Fprintf(out, "%s: %s", cluster, summarizeChanges(changes))
	if drifted > 0 {
		fmt.Fprintf(out, "; %d objects drifted on the cluster", drifted)
	}
	fmt.Fprintln(out)
	return changed || drifted > 0, nil
}

// bundleFromFile reads the Bundle NAME from a manifest file, and serves ConfigMaps found in
// the same file ahead of the hub's, since they would be applied together.
func bundleFromFile(file string, stdin io.Reader, ns, name string, hub client.Reader) (*flv1.Bundle, client.Reader, error) {
	objs, err := readManifests(file, stdin)
	if err != nil {
		return nil, nil, err
	}
	var b *flv1.Bundle
	cms := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		objNS := o.GetNamespace()
		if objNS == "" {
			objNS = ns
		}
		switch {
		case o.GetKind() == "Bundle" && o.GroupVersionKind().Group == flv1.GroupVersion.Group && o.GetName() == name && objNS == ns:
			b = &flv1.Bundle{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, b, true); err != nil {
				return nil, nil, fmt.Errorf("%s: Bundle %s: %w", file, name, err)
			}
			b.Namespace = ns
		case o.GetKind() == "ConfigMap" && o.GetAPIVersion() == "v1" && objNS == ns:
			cm := &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cm); err != nil {
				return nil, nil, fmt.Errorf("%s: ConfigMap %s: %w", file, o.GetName(), err)
			}
			cms[cm.Name] = cm
		}
	}
	if b == nil {
		return nil, nil, fmt.Errorf("%s holds no Bundle %s in namespace %s", file, name, ns)
	}
	return b, overlayReader{Reader: hub, configMaps: cms}, nil
}

type overlayReader struct {
	client.Reader
	configMaps map[string]*corev1.ConfigMap
}

func (r overlayReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		if have := r.configMaps[key.Name]; have != nil {
			have.DeepCopyInto(cm)
			return nil
		}
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// renderForCluster renders a Bundle for one cluster as the hub would, and says whether its
// placement selects the cluster at all.
func renderForCluster(ctx context.Context, reader client.Reader, b *flv1.Bundle, mc *flv1.MemberCluster) ([]*unstructured.Unstructured, bool, error) {
	sel, err := placement.Select(b.Spec.Placement, []flv1.MemberCluster{*mc})
	if err != nil {
		return nil, false, err
	}
	if len(sel.Selected) == 0 {
		return nil, false, nil
	}
	objs, err := bundle.LoadSource(ctx, reader, b)
	if err != nil {
		return nil, false, err
	}
	p, err := bundle.Render(objs, b.Spec.Overrides, []*flv1.MemberCluster{mc})
	if err != nil {
		return nil, false, err
	}
	v := p.ByCluster[mc.Name]
	rendered, err := content.Decode(v.Content.Chunks, v.Content.Hash)
	if err != nil {
		return nil, false, err
	}
	out, err := withVariables(rendered, flv1.WorkVariables{ClusterName: mc.Name, Owner: mc.Spec.Owner, Labels: mc.Labels})
	return out, true, err
}

// contentByHash reads a revision's content from the hub: by the chunk names in ref when it
// is that content, else by looking up the Bundle's chunks with that hash (an older revision
// still kept by the history limit).
func contentByHash(ctx context.Context, c client.Client, bundleUID types.UID, hash string, ref flv1.ContentReference) ([]*unstructured.Unstructured, error) {
	var data [][]byte
	if ref.Hash == hash {
		for i, n := range ref.Chunks {
			ch := &flv1.ContentChunk{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: flv1.ContentNamespace, Name: n}, ch); err != nil {
				return nil, fmt.Errorf("content chunk %d of %d: %w", i+1, len(ref.Chunks), err)
			}
			data = append(data, ch.Data)
		}
	} else {
		list := &flv1.ContentChunkList{}
		if err := c.List(ctx, list, client.InNamespace(flv1.ContentNamespace), client.MatchingLabels{flv1.LabelBundleUID: string(bundleUID)}); err != nil {
			return nil, fmt.Errorf("list content chunks: %w", err)
		}
		var chunks []flv1.ContentChunk
		for _, ch := range list.Items {
			if ch.Hash == hash {
				chunks = append(chunks, ch)
			}
		}
		if len(chunks) == 0 {
			return nil, fmt.Errorf("content %s is no longer stored on the hub (beyond the Bundle's revisionHistoryLimit)", hash[:min(12, len(hash))])
		}
		sort.Slice(chunks, func(i, j int) bool { return chunks[i].Index < chunks[j].Index })
		for _, ch := range chunks {
			data = append(data, ch.Data)
		}
	}
	return content.Decode(data, hash)
}

func withVariables(objs []*unstructured.Unstructured, v flv1.WorkVariables) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	if err := render.Substitute(out, render.Vars{Name: v.ClusterName, Owner: v.Owner, Labels: v.Labels}); err != nil {
		return nil, err
	}
	return out, nil
}

// printReportedDrift lists the drift the agent reported and returns how many objects drifted.
func printReportedDrift(out io.Writer, w *flv1.Work, cluster string) int {
	if w == nil {
		return 0
	}
	n := 0
	for _, r := range w.Status.Resources {
		if len(r.Drift) == 0 {
			continue
		}
		if n == 0 {
			fmt.Fprintf(out, "Drift reported by the agent on %s (live differs from what was applied):\n", cluster)
		}
		n++
		id := r.Kind + " " + r.Name
		if r.Namespace != "" {
			id = r.Kind + " " + r.Namespace + "/" + r.Name
		}
		for _, d := range r.Drift {
			fmt.Fprintf(out, "  %s %s: desired %s, live %s\n", id, d.Path, d.Desired, d.Live)
		}
	}
	return n
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
