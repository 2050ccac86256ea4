package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func newGetBundlesCmd(g *globals) *cobra.Command {
	var namespace, output string
	var all bool
	cmd := &cobra.Command{
		Use:     "bundles [NAME...]",
		Aliases: []string{"bundle", "bdl"},
		Short:   "List Bundles with their revision and how many clusters run it",
		Long: `List Bundles: READY (every targeted cluster is available at the current revision), the
current REVISION, how many clusters are TARGETED, and of those how many have APPLIED it, are
AVAILABLE (every object healthy), FAILED or DRIFTED. "flotilla describe bundle" shows which.`,
		Example: `  flotilla get bundles -n team-web
  flotilla get bundles -A
  flotilla get bundles web -n team-web -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			list := &flv1.BundleList{}
			opts := []client.ListOption{}
			if !all {
				opts = append(opts, client.InNamespace(g.namespaceOr(namespace)))
			}
			if err := c.List(cmd.Context(), list, opts...); err != nil {
				return fmt.Errorf("list bundles: %w", err)
			}
			list.Items = filterNames(list.Items, args, func(b flv1.Bundle) string { return b.Name })
			sort.Slice(list.Items, func(i, j int) bool {
				return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
			})
			switch output {
			case "yaml", "json":
				list.APIVersion, list.Kind = "v1", "List"
				for i := range list.Items {
					list.Items[i].APIVersion, list.Items[i].Kind = flv1.GroupVersion.String(), "Bundle"
				}
				return printObjects(cmd.OutOrStdout(), output, list)
			case "", "wide":
			default:
				return fmt.Errorf("unknown output format %q: use wide, yaml or json", output)
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No bundles found.")
				return nil
			}
			return printBundleTable(cmd.OutOrStdout(), list.Items, output == "wide", time.Now())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundles (default: the kubeconfig's namespace, else default)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list Bundles of every namespace")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json")
	return cmd
}

// shortSource shortens "<ref>@<40-hex commit>" to "<ref>@<12 hex>" for tables.
func shortSource(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 && len(s)-i-1 > 12 {
		return s[:i+13]
	}
	return s
}

func filterNames[T any](items []T, names []string, name func(T) string) []T {
	if len(names) == 0 {
		return items
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := items[:0]
	for _, it := range items {
		if want[name(it)] {
			out = append(out, it)
		}
	}
	return out
}

func printBundleTable(w io.Writer, items []flv1.Bundle, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	h := "NAMESPACE\tNAME\tREADY\tREVISION\tTARGETED\tAPPLIED\tAVAILABLE\tFAILED\tDRIFTED\tAGE"
	if wide {
		h += "\tSOURCE\tROLLOUT\tMESSAGE"
	}
	fmt.Fprintln(tw, h)
	for _, b := range items {
		ready := "Unknown"
		msg := ""
		if c := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionReady); c != nil {
			ready, msg = string(c.Status), c.Message
			if c.Status == "False" {
				ready = c.Reason
			}
		}
		if c := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled); c != nil && c.Status == "True" {
			ready, msg = "Stalled", c.Message
		}
		row := []string{b.Namespace, b.Name, ready, orDash(b.Status.Revision), fmt.Sprint(b.Status.Targeted), fmt.Sprint(b.Status.Applied),
			fmt.Sprint(b.Status.Available), fmt.Sprint(b.Status.Failed), fmt.Sprint(b.Status.Drifted), humanAge(now.Sub(b.CreationTimestamp.Time))}
		if wide {
			ro := "-"
			if r := b.Status.Rollout; r != nil {
				ro = r.Name + " " + orPending(string(r.Phase))
			}
			row = append(row, orDash(shortSource(b.Status.SourceRevision)), ro, orDash(msg))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func newDescribeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "describe", Short: "Show one fleet object in detail"}
	var namespace string
	b := &cobra.Command{
		Use:     "bundle NAME",
		Aliases: []string{"bundles", "bdl"},
		Short:   "Show a Bundle: conditions, revisions, and the state on every targeted cluster",
		Long: `Show a Bundle in detail: its conditions (Ready, Stalled with the reason), the current revision
and the revisions clusters still run, the placement's missing and excluded clusters, and one
line per targeted cluster (revision asked for and applied, Applied / Available / Drifted), then
every failing or drifted object with its reason and drifted fields.`,
		Example: `  flotilla describe bundle web -n team-web`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			return describeBundle(cmd.Context(), cmd.OutOrStdout(), c, g.namespaceOr(namespace), args[0], time.Now())
		},
	}
	b.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundle")
	cmd.AddCommand(b)
	return cmd
}

func describeBundle(ctx context.Context, w io.Writer, c client.Client, ns, name string, now time.Time) error {
	b := &flv1.Bundle{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		return fmt.Errorf("bundle %s/%s: %w", ns, name, err)
	}
	works := &flv1.WorkList{}
	if err := c.List(ctx, works, client.MatchingLabels{flv1.LabelBundleNamespace: ns, flv1.LabelBundleName: name}); err != nil {
		return fmt.Errorf("list Works of %s/%s: %w", ns, name, err)
	}
	sort.Slice(works.Items, func(i, j int) bool { return works.Items[i].Namespace < works.Items[j].Namespace })
	fmt.Fprintf(w, "Name:        %s\nNamespace:   %s\nRevision:    %s (%d variants)\nTargeted:    %d clusters: %d applied, %d available, %d failed, %d drifted, %d unreachable\n",
		b.Name, b.Namespace, orDash(b.Status.Revision), b.Status.Variants, b.Status.Targeted, b.Status.Applied, b.Status.Available,
		b.Status.Failed, b.Status.Drifted, b.Status.Unreachable)
	if b.Status.SourceRevision != "" {
		fmt.Fprintf(w, "Source:      %s\n", b.Status.SourceRevision)
	}
	if b.Spec.Paused {
		fmt.Fprintln(w, "Paused:      true (no new revision is rendered or sent)")
	}
	if r := b.Status.Rollout; r != nil {
		fmt.Fprintf(w, "Rollout:     %s %s (%s -> %s): %s\n             flotilla rollout status %s -n %s\n",
			r.Name, orPending(string(r.Phase)), revOrNone(r.From), r.To, r.Message, b.Name, b.Namespace)
	}
	if len(b.Status.MissingClusters) > 0 {
		fmt.Fprintf(w, "Missing:     %s (named in placement.clusterNames, not in the fleet)\n", strings.Join(b.Status.MissingClusters, ", "))
	}
	if b.Status.Excluded > 0 {
		fmt.Fprintf(w, "Excluded:    %d clusters match but are tainted or not accepted\n", b.Status.Excluded)
	}
	fmt.Fprintln(w, "Conditions:")
	for _, cond := range b.Status.Conditions {
		fmt.Fprintf(w, "  %-9s %-6s %-16s %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	if len(b.Status.Revisions) > 1 {
		fmt.Fprintln(w, "Revisions:")
		for _, r := range b.Status.Revisions {
			fmt.Fprintf(w, "  %s: %d clusters, %d available, %d failed\n", r.Revision, r.Clusters, r.Available, r.Failed)
		}
	}
	if len(works.Items) == 0 {
		fmt.Fprintln(w, "Clusters:    none")
		return nil
	}
	fmt.Fprintln(w, "Clusters:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLUSTER\tREVISION\tSOURCE\tAPPLIED-REVISION\tWAVE\tAPPLIED\tAVAILABLE\tDRIFTED\tMESSAGE")
	for _, wk := range works.Items {
		cond := func(t string) (string, string) {
			if c := meta.FindStatusCondition(wk.Status.Conditions, t); c != nil {
				return string(c.Status), c.Message
			}
			return "-", ""
		}
		ap, apMsg := cond(flv1.ConditionApplied)
		av, avMsg := cond(flv1.ConditionAvailable)
		dr, drMsg := cond(flv1.ConditionDrifted)
		msg := avMsg
		switch {
		case ap == "False":
			msg = apMsg
		case dr == "True" || strings.Contains(drMsg, "suspended"):
			msg = drMsg
		case ap == "-":
			msg = "waiting for the agent"
		}
		wave := "-"
		if r := wk.Spec.Rollout; r != nil {
			wave = r.Wave
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", wk.Labels[flv1.LabelCluster], wk.Spec.Revision, orDash(shortSource(wk.Spec.SourceRevision)),
			orDash(wk.Status.AppliedRevision), wave, ap, av, dr, msg)
	}
	_ = tw.Flush()
	var problems []string
	for _, wk := range works.Items {
		cluster := wk.Labels[flv1.LabelCluster]
		if r := wk.Spec.Rollout; r != nil && r.FailedAt != nil {
			problems = append(problems, fmt.Sprintf("  %s: failed in rollout %s (wave %s) at %s: %s", cluster, r.Name, r.Wave,
				r.FailedAt.UTC().Format(time.RFC3339), r.FailureReason))
		}
		if bg := wk.Spec.BreakGlass; bg != nil {
			state := "active"
			if !now.Before(bg.Until.Time) {
				state = "expired"
			}
			problems = append(problems, fmt.Sprintf("  %s: break-glass %s: by %s at %s until %s: %s", cluster, state, bg.By,
				bg.At.UTC().Format(time.RFC3339), bg.Until.UTC().Format(time.RFC3339), bg.Reason))
		}
		for _, r := range wk.Status.Resources {
			id := r.Kind + " " + r.Name
			if r.Namespace != "" {
				id = r.Kind + " " + r.Namespace + "/" + r.Name
			}
			if r.Error != "" {
				problems = append(problems, fmt.Sprintf("  %s: %s: %s", cluster, id, r.Error))
			} else if r.Health == "Failed" {
				problems = append(problems, fmt.Sprintf("  %s: %s: Failed: %s", cluster, id, r.Message))
			}
			for _, d := range r.Drift {
				problems = append(problems, fmt.Sprintf("  %s: %s: drifted %s: delivered %s, live %s", cluster, id, orDash(d.Path), orDash(d.Desired), orDash(d.Live)))
			}
		}
	}
	if len(problems) > 0 {
		fmt.Fprintln(w, "Problems:")
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
	}
	return nil
}
