package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"flotilla.dev/flotilla/internal/render"
)

// applyFieldManager is the CLI's field manager, the same for every user, as kubectl's is.
const applyFieldManager = "flotilla-cli"

func newApplyCmd(g *globals) *cobra.Command {
	var files []string
	var namespace string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update hub objects (Bundles, MemberClusters, ...) from YAML",
		Long: `Apply objects to the hub with server-side apply, as "kubectl apply --server-side" would.
Every file is read and parsed before anything is sent, so a bad document applies nothing.
Unknown or misspelled fields are errors (strict field validation), not silently dropped.
"-" reads standard input.`,
		Example: `  flotilla apply -f bundle.yaml
  flotilla apply -f bundles/ -n team-web      # every .yaml/.yml/.json file in the directory
  flotilla apply -f bundle.yaml --dry-run     # validate on the server, change nothing`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("name at least one file with -f")
			}
			var objs []*unstructured.Unstructured
			for _, f := range files {
				docs, err := readManifests(f, cmd.InOrStdin())
				if err != nil {
					return err
				}
				objs = append(objs, docs...)
			}
			if len(objs) == 0 {
				return fmt.Errorf("no objects in %s", strings.Join(files, ", "))
			}
			cfg, err := g.hubConfig()
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			dc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return err
			}
			mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
			ns := g.namespaceOr(namespace)
			type target struct {
				obj *unstructured.Unstructured
				ri  dynamic.ResourceInterface
			}
			var targets []target
			for _, o := range objs {
				gvk := o.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					if meta.IsNoMatchError(err) {
						return fmt.Errorf("%s %s: the hub does not serve %s (is `flotilla hub` installed and up to date?); nothing was applied", o.GetKind(), o.GetName(), gvk)
					}
					return err
				}
				if o.GetName() == "" {
					return fmt.Errorf("a %s has no metadata.name; nothing was applied", o.GetKind())
				}
				var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					if o.GetNamespace() == "" {
						o.SetNamespace(ns)
					}
					ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
				}
				targets = append(targets, target{o, ri})
			}
			// Strict: a misspelled field is an error, not silently pruned by the schema.
			opts := metav1.PatchOptions{FieldManager: applyFieldManager, Force: ptr.To(true), FieldValidation: metav1.FieldValidationStrict}
			if dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			for i, t := range targets {
				body, err := t.obj.MarshalJSON()
				if err != nil {
					return err
				}
				_, err = t.ri.Patch(cmd.Context(), t.obj.GetName(), types.ApplyPatchType, body, opts)
				id := strings.ToLower(t.obj.GetKind()) + "/" + t.obj.GetName()
				if err != nil {
					return fmt.Errorf("%s: %w (%d of %d objects applied before it)", id, err, i, len(targets))
				}
				suffix := ""
				if dryRun {
					suffix = " (dry run)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s applied%s\n", id, suffix)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory or - (stdin) with YAML or JSON objects")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace for namespaced objects that name none")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate on the server without changing anything")
	return cmd
}

// readManifests reads a file, a directory of .yaml/.yml/.json files, or stdin ("-").
func readManifests(path string, stdin io.Reader) ([]*unstructured.Unstructured, error) {
	if path == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, err
		}
		objs, err := render.ParseYAML(b)
		if err != nil {
			return nil, fmt.Errorf("stdin: %w; nothing was applied", err)
		}
		return objs, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	paths := []string{path}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		paths = nil
		for _, e := range entries {
			n := e.Name()
			if !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".json")) {
				paths = append(paths, path+"/"+n)
			}
		}
	}
	var out []*unstructured.Unstructured
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := render.ParseYAML(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w; nothing was applied", p, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}
