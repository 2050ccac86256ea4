package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func newRolloutCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Watch and steer the progressive rollouts of Bundles",
		Long: `A Bundle with spec.rollout moves each new revision through the fleet in waves: each wave
starts (after an approval, if it asks for one), moves at most maxConcurrent clusters at a
time, waits until they are healthy, soaks, and passes. Clusters that are not healthy within
progressDeadline count against a failure budget for the whole rollout; exhausting it (or a
wave timing out) halts the rollout, or rolls it back with onFailure: Rollback.

Each move of a Bundle from one revision to the next is a Rollout object beside the Bundle.
These commands act on the Bundle's latest Rollout and record who did what, when and why.`,
		Example: `  flotilla rollout status web -n team-web -w
  flotilla rollout approve web -n team-web --wave prod --comment "canary clean for 1h"
  flotilla rollout undo web -n team-web --reason "INC-42: 5xx in eu"
  flotilla rollout history web -n team-web`,
	}
	cmd.AddCommand(newRolloutStatusCmd(g), newRolloutListCmd(g), newRolloutHistoryCmd(g), newRolloutApproveCmd(g))
	for _, a := range rolloutActions {
		cmd.AddCommand(newRolloutActionCmd(g, a))
	}
	return cmd
}

// rolloutAction is one of the commands that set a flag of the Rollout's spec and record it.
type rolloutAction struct {
	use, short, long, record string
	apply                    func(*flv1.RolloutSpec) error
	done                     string
}

var rolloutActions = []rolloutAction{
	{use: "pause", short: "Pause the Bundle's rollout: no cluster moves and no wave starts", record: "Pause",
		long:  "Pause the rollout. Clusters already moved keep their deadlines (a failure still counts); wave timeouts stop while paused.",
		apply: func(s *flv1.RolloutSpec) error { s.Paused = true; return nil }, done: "paused"},
	{use: "resume", short: "Resume a paused rollout", record: "Resume",
		long: "Resume a paused rollout. Running waves' timeouts move by the time spent paused.",
		apply: func(s *flv1.RolloutSpec) error {
			if !s.Paused {
				return fmt.Errorf("the rollout is not paused")
			}
			s.Paused = false
			return nil
		}, done: "resumed"},
	{use: "abort", short: "Stop the rollout where it stands (clusters already moved stay)", record: "Abort",
		long:  "Abort the rollout: it halts and moves no cluster any more; clusters already moved stay on the new revision. Undo returns them.",
		apply: func(s *flv1.RolloutSpec) error { s.Abort = true; return nil }, done: "aborted"},
	{use: "undo", short: "Halt the rollout and return every moved cluster to the previous revision, at once", record: "Rollback",
		long: `Halt and reverse, as one action: the rollout stops and every cluster already moved to the new
revision returns to the one the fleet ran before (the rollout's "from"), all at once. Progress
shows in the same Rollout (RollingBack, then RolledBack). Unreachable clusters are listed as
pending and roll back when they return. Works on a finished rollout too.`,
		apply: func(s *flv1.RolloutSpec) error { s.Rollback = true; return nil }, done: "rolling back"},
}

func newRolloutActionCmd(g *globals, a rolloutAction) *cobra.Command {
	var namespace, reason string
	cmd := &cobra.Command{
		Use:   a.use + " BUNDLE",
		Short: a.short,
		Long:  a.long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns := g.namespaceOr(namespace)
			ro, err := g.actOnRollout(cmd.Context(), ns, args[0], func(ro *flv1.Rollout, who string) error {
				if ro.Status.Phase.Done() && a.record != "Rollback" {
					return fmt.Errorf("rollout %s is %s: nothing to %s", ro.Name, ro.Status.Phase, a.use)
				}
				if err := a.apply(&ro.Spec); err != nil {
					return fmt.Errorf("rollout %s: %w", ro.Name, err)
				}
				ro.Spec.Actions = append(ro.Spec.Actions, flv1.RolloutAction{Action: a.record, By: who, At: metav1.Now(), Reason: reason})
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rollout %s/%s (%s -> %s) %s; follow it with: flotilla rollout status %s -n %s -w\n",
				ns, ro.Name, revOrNone(ro.Spec.From), ro.Spec.To, a.done, args[0], ns)
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundle")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the Rollout)")
	return cmd
}

func newRolloutApproveCmd(g *globals) *cobra.Command {
	var namespace, wave, comment string
	cmd := &cobra.Command{
		Use:   "approve BUNDLE --wave WAVE",
		Short: "Approve a wave that waits for approval, on record",
		Long: `Approve a wave of the Bundle's latest rollout. A wave with approval: true starts only once
approved; approving before its turn is allowed. Who approved, when and the comment are
recorded in the Rollout.`,
		Example: `  flotilla rollout approve web -n team-web --wave prod --comment "canary clean for 1h"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wave == "" {
				return fmt.Errorf("name the wave with --wave")
			}
			ns := g.namespaceOr(namespace)
			var who string
			ro, err := g.actOnRollout(cmd.Context(), ns, args[0], func(ro *flv1.Rollout, by string) error {
				who = by
				if ro.Status.Phase.Done() {
					return fmt.Errorf("rollout %s is %s: nothing to approve", ro.Name, ro.Status.Phase)
				}
				var names []string
				found := false
				for _, w := range ro.Spec.Strategy.Waves {
					if w.Approval {
						names = append(names, w.Name)
					}
					found = found || (w.Name == wave && w.Approval)
				}
				if !found {
					return fmt.Errorf("rollout %s has no wave %q that asks for approval (waves that do: %s)", ro.Name, wave, strings.Join(names, ", "))
				}
				for _, a := range ro.Spec.Approvals {
					if a.Wave == wave {
						return fmt.Errorf("wave %s of rollout %s was already approved by %s at %s", wave, ro.Name, a.By, a.At.Format(time.RFC3339))
					}
				}
				ro.Spec.Approvals = append(ro.Spec.Approvals, flv1.Approval{Wave: wave, By: who, At: metav1.Now(), Comment: comment})
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wave %s of rollout %s/%s approved by %s\n", wave, ns, ro.Name, who)
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundle")
	cmd.Flags().StringVar(&wave, "wave", "", "the wave to approve (required)")
	cmd.Flags().StringVar(&comment, "comment", "", "a comment for the record")
	return cmd
}

// bundleRollouts lists a Bundle's Rollouts, oldest first.
func bundleRollouts(ctx context.Context, c client.Client, ns, bundle string) ([]flv1.Rollout, error) {
	list := &flv1.RolloutList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{flv1.LabelBundleName: bundle}); err != nil {
		return nil, fmt.Errorf("list rollouts: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Seq() < list.Items[j].Seq() })
	return list.Items, nil
}

// latestRollout is the Bundle's newest Rollout, with an error that says why there is none.
func latestRollout(ctx context.Context, c client.Client, ns, bundle string) (*flv1.Rollout, error) {
	all, err := bundleRollouts(ctx, c, ns, bundle)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		b := &flv1.Bundle{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: bundle}, b); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("bundle %s/%s not found", ns, bundle)
			}
			return nil, err
		}
		if b.Spec.Rollout == nil {
			return nil, fmt.Errorf("bundle %s/%s has no rollout strategy (spec.rollout): its revisions go to every cluster at once", ns, bundle)
		}
		return nil, fmt.Errorf("bundle %s/%s has no rollout yet: one opens when its revision changes", ns, bundle)
	}
	return &all[len(all)-1], nil
}

// actOnRollout applies a person's action to the Bundle's latest Rollout, retrying on
// conflicts; mutate gets who the hub says the caller is, for the record.
func (g *globals) actOnRollout(ctx context.Context, ns, bundle string, mutate func(ro *flv1.Rollout, who string) error) (*flv1.Rollout, error) {
	c, cfg, err := g.hubClient()
	if err != nil {
		return nil, err
	}
	who := whoAmI(ctx, cfg)
	var ro *flv1.Rollout
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if ro, err = latestRollout(ctx, c, ns, bundle); err != nil {
			return err
		}
		if err := mutate(ro, who); err != nil {
			return err
		}
		return c.Update(ctx, ro)
	})
	return ro, err
}

func revOrNone(rev string) string {
	if rev == "" {
		return "(nothing)"
	}
	return rev
}
