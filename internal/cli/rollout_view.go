package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func newRolloutStatusCmd(g *globals) *cobra.Command {
	var namespace string
	var watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "status BUNDLE",
		Short: "Show the Bundle's latest rollout: waves, share of the fleet moved, budget, failures",
		Long: `Show the Bundle's latest rollout as one operation: a progress bar per wave, the share of the
fleet on the new revision, the failure budget used and allowed, failures grouped by label
(env, region, provider, or the strategy's dimensionLabels), the first failed clusters with
their reasons, the time elapsed and an estimate of the time left.

With -w it follows the rollout until it finishes or halts: redrawn in place on a terminal,
printed again on each change otherwise (logs, CI).`,
		Example: `  flotilla rollout status web -n team-web
  flotilla rollout status web -n team-web -w`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			ns := g.namespaceOr(namespace)
			out := cmd.OutOrStdout()
			tty := false
			if f, ok := out.(*os.File); ok {
				tty = term.IsTerminal(int(f.Fd()))
			}
			last := ""
			for {
				ro, err := latestRollout(cmd.Context(), c, ns, args[0])
				if err != nil {
					return err
				}
				var b strings.Builder
				printRolloutStatus(&b, ro, time.Now())
				if text := b.String(); text != last {
					if tty && last != "" {
						fmt.Fprint(out, "\033[H\033[2J")
					} else if last != "" {
						fmt.Fprintln(out, "---")
					}
					fmt.Fprint(out, text)
					last = text
				}
				if !watch || ro.Status.Phase.Done() || ro.Status.Phase == flv1.PhaseHalted {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundle")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "follow the rollout until it finishes or halts")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often -w reads the rollout")
	return cmd
}

// printRolloutStatus renders one rollout for people.
func printRolloutStatus(w io.Writer, ro *flv1.Rollout, now time.Time) {
	st := &ro.Status
	fmt.Fprintf(w, "Rollout %s/%s of bundle %s: %s -> %s%s\n", ro.Namespace, ro.Name, ro.Spec.Bundle, revOrNone(ro.Spec.From), ro.Spec.To, sources(ro))
	line := fmt.Sprintf("Phase:   %s", orPending(string(st.Phase)))
	if st.StartedAt != nil {
		end := now
		if st.FinishedAt != nil {
			end = st.FinishedAt.Time
		}
		elapsed := end.Sub(st.StartedAt.Time).Round(time.Second)
		line += fmt.Sprintf("   elapsed %s", elapsed)
		if left, ok := timeLeft(st, elapsed); ok {
			line += fmt.Sprintf(", about %s left", left)
		}
	}
	fmt.Fprintln(w, line)
	if st.Message != "" {
		fmt.Fprintf(w, "         %s\n", st.Message)
	}
	fmt.Fprintf(w, "Fleet:   %s %d%% on %s (%d of %d clusters; %d healthy, %d unreachable)\n",
		bar(st.Clusters.Updated, st.Clusters.Total, 20), st.UpdatedPercent, ro.Spec.To, st.Clusters.Updated, st.Clusters.Total, st.Clusters.Healthy, st.Clusters.Unreachable)
	fmt.Fprintf(w, "Budget:  %d of %d failures allowed used", st.FailureBudget.Used, st.FailureBudget.Allowed)
	if st.FailureBudget.Used > st.FailureBudget.Allowed {
		fmt.Fprint(w, " (exhausted)")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Waves:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	approvals := map[string]flv1.Approval{}
	for _, a := range ro.Spec.Approvals {
		approvals[a.Wave] = a
	}
	for _, ws := range st.Waves {
		note := ""
		if a, ok := approvals[ws.Name]; ok {
			note = "approved by " + a.By
		}
		if ws.Phase == flv1.WaveSoaking && ws.SoakStartedAt != nil {
			note = strings.TrimSpace(note + " soaking since " + ws.SoakStartedAt.Format(time.TimeOnly))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d updated, %d healthy, %d failed\t%s\t%s\n", ws.Name, bar(ws.Updated, ws.Clusters, 10),
			ws.Updated, ws.Clusters, ws.Healthy, ws.Failed, ws.Phase, note)
	}
	_ = tw.Flush()
	if len(st.FailuresByDimension) > 0 {
		var parts []string
		for _, d := range st.FailuresByDimension {
			v := d.Value
			if v == "" {
				v = "(none)"
			}
			parts = append(parts, fmt.Sprintf("%s=%s %d/%d", d.Label, v, d.Failed, d.Clusters))
		}
		fmt.Fprintf(w, "Failures by label: %s\n", strings.Join(parts, ", "))
	}
	if len(st.FailedClusters) > 0 {
		fmt.Fprintf(w, "Failed clusters (%d):\n", st.Clusters.Failed)
		for i, f := range st.FailedClusters {
			if i == 10 {
				fmt.Fprintf(w, "  ... %d more in the Rollout's status\n", len(st.FailedClusters)-10)
				break
			}
			fmt.Fprintf(w, "  %s (wave %s, %s): %s\n", f.Cluster, f.Wave, f.At.Format(time.TimeOnly), f.Reason)
		}
	}
	if st.PendingRollbackCount > 0 {
		fmt.Fprintf(w, "Pending rollback (%d, they roll back when they return): %s\n", st.PendingRollbackCount, strings.Join(st.PendingRollback, ", "))
	}
}

// timeLeft estimates the rest from the pace so far (clusters moved per elapsed time); soaks
// and approvals still to come are not in it.
func timeLeft(st *flv1.RolloutStatus, elapsed time.Duration) (time.Duration, bool) {
	done, total := st.Clusters.Updated, st.Clusters.Total
	if st.Phase.Done() || st.Phase == flv1.PhaseHalted || done == 0 || done >= total {
		return 0, false
	}
	return (elapsed * time.Duration(total-done) / time.Duration(done)).Round(time.Second), true
}

func bar(n, total int32, width int) string {
	filled := 0
	if total > 0 {
		filled = int(n) * width / int(total)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "]"
}

func orPending(s string) string {
	if s == "" {
		return "Pending"
	}
	return s
}

func newRolloutListCmd(g *globals) *cobra.Command {
	var namespace string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List rollouts: phase, revisions, share of the fleet moved, failures",
		Example: `  flotilla rollout list -n team-web
  flotilla rollout list -A`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			list := &flv1.RolloutList{}
			var opts []client.ListOption
			if !all {
				opts = append(opts, client.InNamespace(g.namespaceOr(namespace)))
			}
			if err := c.List(cmd.Context(), list, opts...); err != nil {
				return fmt.Errorf("list rollouts: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAMESPACE\tNAME\tBUNDLE\tPHASE\tFROM\tTO\tUPDATED\tFAILED/BUDGET\tAGE")
			for _, ro := range list.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d%%\t%d/%d\t%s\n", ro.Namespace, ro.Name, ro.Spec.Bundle, orPending(string(ro.Status.Phase)),
					revOrNone(ro.Spec.From), ro.Spec.To, ro.Status.UpdatedPercent, ro.Status.FailureBudget.Used, ro.Status.FailureBudget.Allowed,
					humanAge(time.Since(ro.CreationTimestamp.Time)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "every namespace")
	return cmd
}

func newRolloutHistoryCmd(g *globals) *cobra.Command {
	var namespace string
	cmd := &cobra.Command{
		Use:   "history BUNDLE",
		Short: "The Bundle's rollouts, oldest first: what moved, how it ended, who approved or intervened",
		Long: `The audit trail of a Bundle's rollouts (the Bundle's rolloutHistoryLimit finished ones are
kept): each rollout's revisions, phase, timings, failures, and every approval, pause, resume,
abort and rollback with who, when and why.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			ns := g.namespaceOr(namespace)
			all, err := bundleRollouts(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			if len(all) == 0 {
				_, err := latestRollout(cmd.Context(), c, ns, args[0])
				return err
			}
			w := cmd.OutOrStdout()
			for _, ro := range all {
				st := ro.Status
				fmt.Fprintf(w, "%s  %s -> %s  %s%s", ro.Name, revOrNone(ro.Spec.From), ro.Spec.To, orPending(string(st.Phase)), sources(&ro))
				if st.StartedAt != nil {
					fmt.Fprintf(w, "  started %s", st.StartedAt.Format(time.RFC3339))
					if st.FinishedAt != nil {
						fmt.Fprintf(w, ", took %s", st.FinishedAt.Sub(st.StartedAt.Time).Round(time.Second))
					}
				}
				fmt.Fprintf(w, "  failed %d/%d allowed\n", st.FailureBudget.Used, st.FailureBudget.Allowed)
				if st.HaltReason != "" {
					fmt.Fprintf(w, "    halted: %s\n", st.HaltReason)
				}
				for _, a := range ro.Spec.Approvals {
					fmt.Fprintf(w, "    %s  approved wave %s by %s%s\n", a.At.Format(time.RFC3339), a.Wave, a.By, suffix(a.Comment))
				}
				for _, a := range ro.Spec.Actions {
					fmt.Fprintf(w, "    %s  %s by %s%s\n", a.At.Format(time.RFC3339), strings.ToLower(a.Action), a.By, suffix(a.Reason))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundle")
	return cmd
}

// sources says which commits a rollout moves between, when its Bundle reads Git.
func sources(ro *flv1.Rollout) string {
	if ro.Spec.ToSource == "" {
		return ""
	}
	return fmt.Sprintf("  (%s -> %s)", orDash(shortSource(ro.Spec.FromSource)), shortSource(ro.Spec.ToSource))
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
