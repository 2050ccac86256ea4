package cli

import (
	"context"
	"fmt"
	"os/user"
	"time"

	"github.com/spf13/cobra"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// breakGlassFieldManager owns spec.breakGlass of Works; the hub's manager owns the rest.
const breakGlassFieldManager = "flotilla-breakglass"

// MaxBreakGlass bounds a break-glass window: suspending correction is an emergency measure.
const MaxBreakGlass = 7 * 24 * time.Hour

func newBreakGlassCmd(g *globals) *cobra.Command {
	var bundleName, namespace, reason string
	var dur time.Duration
	var end bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "breakglass CLUSTER --bundle NAME --for DURATION --reason TEXT",
		Short: "Suspend drift correction of one Bundle on one cluster, for a bounded time, on record",
		Long: `Break glass: let people change a Bundle's objects by hand on one cluster during an incident
without the agent restoring them. Drift is still detected and reported (Drifted=True with
reason BreakGlassActive). Who did it, why and until when are recorded in the cluster's Work and
shown by "flotilla describe bundle". Correction resumes by itself when the time is up, or at
once with --end.`,
		Example: `  flotilla breakglass prod-eu-1 --bundle web -n team-web --for 2h --reason "INC-1234: hotfix replicas"
  flotilla breakglass prod-eu-1 --bundle web -n team-web --end`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if bundleName == "" {
				return fmt.Errorf("name the Bundle with --bundle")
			}
			if !end {
				if reason == "" {
					return fmt.Errorf("say why with --reason: it is recorded and shown to everyone")
				}
				if dur <= 0 || dur > MaxBreakGlass {
					return fmt.Errorf("--for must be between 1s and %s (got %s)", MaxBreakGlass, dur)
				}
			}
			c, cfg, err := g.hubClient()
			if err != nil {
				return err
			}
			ns := g.namespaceOr(namespace)
			key := types.NamespacedName{Namespace: flv1.ClusterNamespace(args[0]), Name: flv1.WorkName(ns, bundleName)}
			w := &flv1.Work{}
			if err := c.Get(cmd.Context(), key, w); err != nil {
				return fmt.Errorf("bundle %s/%s on cluster %s: %w (is the Bundle placed there?)", ns, bundleName, args[0], err)
			}
			var bg any // nil removes the field we own
			var until time.Time
			if !end {
				now := time.Now().UTC().Truncate(time.Second)
				until = now.Add(dur)
				bg = map[string]any{"until": until.Format(time.RFC3339), "at": now.Format(time.RFC3339),
					"by": whoAmI(cmd.Context(), cfg), "reason": reason}
			}
			spec := map[string]any{}
			if bg != nil {
				spec["breakGlass"] = bg
			}
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": flv1.GroupVersion.String(), "kind": "Work",
				"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace}, "spec": spec}}
			if err := c.Apply(cmd.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(breakGlassFieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("record break-glass: %w", err)
			}
			if end {
				fmt.Fprintf(cmd.OutOrStdout(), "break-glass ended: drift correction of %s/%s on %s resumes now\n", ns, bundleName, args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "drift correction of %s/%s on %s suspended until %s (%s); drift is still reported\n",
					ns, bundleName, args[0], until.Format(time.RFC3339), dur)
			}
			if wait <= 0 {
				return nil
			}
			// The record is on the hub now, but the agent acts on it only once it has read it:
			// wait for its acknowledgement so nobody edits a cluster that would still correct.
			if err := waitBreakGlassAck(cmd.Context(), c, key, !end, wait); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "acknowledged by the agent on %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&bundleName, "bundle", "", "the Bundle (required)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the Bundle")
	cmd.Flags().DurationVar(&dur, "for", 0, "how long correction stays suspended, e.g. 30m or 2h (at most 168h)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; recorded and shown)")
	cmd.Flags().BoolVar(&end, "end", false, "end a break-glass now")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "wait this long for the cluster's agent to acknowledge (0: do not wait)")
	return cmd
}

// waitBreakGlassAck polls the Work until its agent has observed the new generation and
// reports the break-glass as active (or, when ending, as no longer active).
func waitBreakGlassAck(ctx context.Context, c client.Client, key types.NamespacedName, active bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var gen int64
	for {
		w := &flv1.Work{}
		if err := c.Get(ctx, key, w); err == nil {
			if gen == 0 {
				gen = w.Generation
			}
			d := meta.FindStatusCondition(w.Status.Conditions, flv1.ConditionDrifted)
			if w.Status.ObservedGeneration >= gen && d != nil && d.ObservedGeneration >= gen &&
				(d.Reason == flv1.ReasonBreakGlassActive) == active {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the agent has not acknowledged within %s (is the cluster offline?); "+
				"the record stands and the agent acts on it as soon as it reads its Work", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// whoAmI asks the hub who the caller is (SelfSubjectReview), else uses the local user name.
func whoAmI(ctx context.Context, cfg *rest.Config) string {
	if cs, err := kubernetes.NewForConfig(cfg); err == nil {
		if r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil && r.Status.UserInfo.Username != "" {
			return r.Status.UserInfo.Username
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username + " (local user)"
	}
	return "unknown"
}
