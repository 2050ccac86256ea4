// Package cli holds the cobra commands of the flotilla binary.
package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/agentcmd"
	"flotilla.dev/flotilla/internal/hub"
	"flotilla.dev/flotilla/internal/version"
)

// globals are the flags every user command shares.
type globals struct {
	hubKubeconfig string
	hubContext    string
}

// NewRoot builds the flotilla command tree.
func NewRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "flotilla",
		Short: "Manage many Kubernetes clusters as one fleet",
		Long: `Flotilla manages a fleet of Kubernetes clusters from one hub: an inventory of member
clusters with owners and labels, and Bundles: one shared baseline delivered to every cluster
that should have it, with per-cluster overrides, drift correction and offline operation;
and progressive rollouts of every change: waves, soak, approvals, a failure budget, halt and
undo ("flotilla rollout --help").

The hub is a Kubernetes API server running "flotilla hub"; each member runs "flotilla agent",
which only needs outbound access to the hub. Commands that talk to the hub use
--hub-kubeconfig, else $KUBECONFIG, else ~/.kube/config.

Try a local fleet:  flotilla lab up && export KUBECONFIG=$(flotilla lab kubeconfig) && flotilla get clusters`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.PersistentFlags().StringVar(&g.hubKubeconfig, "hub-kubeconfig", "", "kubeconfig of the hub (default $KUBECONFIG, then ~/.kube/config)")
	root.PersistentFlags().StringVar(&g.hubContext, "hub-context", "", "context in the hub kubeconfig (default: its current context)")
	root.AddCommand(newHubCmd(g), agentcmd.New(), newJoinCmd(g), newUnjoinCmd(g), newGetCmd(g), newDescribeCmd(g), newApplyCmd(g), newDiffCmd(g), newBreakGlassCmd(g), newRolloutCmd(g), newLabCmd(), newBenchCmd(), version.Command())
	return root
}

// hubConfig loads the hub's rest config from the flags or the usual kubeconfig rules.
func (g *globals) hubConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.hubKubeconfig != "" {
		rules.ExplicitPath = g.hubKubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: g.hubContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig: %w (set --hub-kubeconfig or KUBECONFIG)", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

// namespaceOr returns ns, else the hub kubeconfig context's namespace, else "default".
func (g *globals) namespaceOr(ns string) string {
	if ns != "" {
		return ns
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.hubKubeconfig != "" {
		rules.ExplicitPath = g.hubKubeconfig
	}
	if n, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: g.hubContext}).Namespace(); err == nil && n != "" {
		return n
	}
	return "default"
}

func (g *globals) hubClient() (client.Client, *rest.Config, error) {
	cfg, err := g.hubConfig()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: hub.Scheme()})
	if err != nil {
		return nil, nil, fmt.Errorf("hub at %s: %w", cfg.Host, err)
	}
	return c, cfg, nil
}
