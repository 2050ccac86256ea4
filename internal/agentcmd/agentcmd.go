// Package agentcmd holds the `agent` command, shared by the flotilla binary and the small
// flotilla-agent binary that members run (it links only the agent, so it stays small in memory).
package agentcmd

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"flotilla.dev/flotilla/internal/agent"
	"flotilla.dev/flotilla/internal/version"
)

// New returns the `agent` command.
func New() *cobra.Command {
	o := agent.Options{}
	var kubeconfig string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the member agent (normally installed by `flotilla join`)",
		Long: `Run the agent of one member cluster. It reads its hub credentials from the Secret
flotilla-system/flotilla-hub on the member (written by "flotilla join"), then:
  - renews its heartbeat Lease in its hub namespace cluster-<name>;
  - reports the member's Kubernetes version, nodes, capacity, allocatable and pod requests
    into its MemberClusterReport in cluster-<name> (the hub copies them into the
    MemberCluster's status) within a second of a node change, and when a periodic check
    finds them changed (unchanged facts are rewritten every 10 minutes);
  - rotates its hub token before it expires and stores the new one in the Secret.
When the hub is unreachable it keeps retrying with backoff and says so in its log.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			var cfg *rest.Config
			var err error
			if kubeconfig != "" {
				cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			} else {
				cfg, err = rest.InClusterConfig()
			}
			if err != nil {
				return err
			}
			o.Member = cfg
			o.Version = version.String()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			a, err := agent.New(ctx, o)
			if err != nil {
				return err
			}
			return a.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "member-kubeconfig", "", "kubeconfig of the member cluster (default: in-cluster config)")
	f.DurationVar(&o.HeartbeatInterval, "heartbeat-interval", 0, "how often to renew the heartbeat Lease; the hub judges the cluster unreachable after 5 missed (default 30s)")
	f.DurationVar(&o.ReportInterval, "report-interval", 0, "how often to re-read the facts and write them if they changed (default 1m; unchanged facts are rewritten every 10m)")
	f.Float64Var(&o.RotateFraction, "token-rotate-fraction", agent.DefaultRotateFraction, "share of the hub token's lifetime after which it is rotated")
	_ = f.MarkHidden("token-rotate-fraction") // for tests: lets a 10m token rotate in seconds
	f.BoolVarP(&verbose, "verbose", "v", false, "log debug details")
	return cmd
}
