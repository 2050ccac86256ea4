package cli

import (
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"flotilla.dev/flotilla/internal/hub"
)

func newHubCmd(g *globals) *cobra.Command {
	o := hub.Options{}
	var verbose bool
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the hub controllers against the hub API server",
		Long: `Run Flotilla's hub controllers. They install Flotilla's CRDs, and for every accepted
MemberCluster create the hub namespace cluster-<name>, the agent's ServiceAccount and its
least-privilege RBAC, and track the agent's heartbeat: a cluster whose heartbeat is older than
the grace period is marked Ready=False (reason Unreachable). For every Bundle they select the
clusters, render the content once per distinct set of overrides, store it as an immutable
BundleRevision and write one Work per cluster, then gather the agents' reports into the
Bundle's status. They fetch GitRepositories (on their interval, or at once when a signed
webhook call arrives) and renders Bundles whose source is a Git path, a Kustomize overlay or a
Helm chart. Bundles with a rollout strategy move each new revision through the fleet in
waves (see "flotilla rollout --help").

Several replicas may run; leader election lets one reconcile at a time.

When the API server throttles the hub (priority and fairness answer 429), the hub halves how
many writes it sends at once on every 429, grows it back as writes succeed once the 429's
Retry-After has passed, and restores the maximum after 30 s without one: slower, never lost
(metric flotilla_hub_writes_in_flight_limit).
Give the agents' ServiceAccounts their own FlowSchema so that thousands of heartbeats cannot
starve the hub's writes (docs/performance.md).`,
		Example: `  flotilla hub --hub-kubeconfig hub.kubeconfig
  flotilla hub --heartbeat-grace 2m --metrics-bind-address :8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseDevMode(verbose)))
			cfg, err := g.hubConfig()
			if err != nil {
				return err
			}
			cfg.Timeout = 0 // watches are long-lived
			o.Config = cfg
			return hub.Run(ctrl.SetupSignalHandler(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader among hub replicas (Lease flotilla-system/flotilla-hub)")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", `address of /metrics ("0" disables it)`)
	f.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" disables them)`)
	f.DurationVar(&o.HeartbeatGrace, "heartbeat-grace", 0, "mark a cluster Unreachable when its agent's heartbeat is older than this (default 5 x the interval the agent declares)")
	f.StringVar(&o.PprofAddr, "pprof-bind-address", "", `address of Go's /debug/pprof, to profile the hub (default: off)`)
	f.BoolVar(&o.InstallCRDs, "install-crds", true, "install or upgrade Flotilla's CRDs at start")
	f.Float32Var(&o.QPS, "kube-api-qps", hub.DefaultQPS, "requests per second to the hub API server (fan-out writes one Work per cluster); it bounds the rate, the 429-adaptive limit the concurrency")
	f.IntVar(&o.Burst, "kube-api-burst", hub.DefaultBurst, "burst of requests to the hub API server")
	f.StringVar(&o.WebhookAddr, "webhook-bind-address", ":8082", `address of the Git webhook /hooks/git/<namespace>/<name> ("0" disables it)`)
	f.StringVar(&o.GitCacheDir, "git-cache-dir", "", "where GitRepositories are cloned (default: flotilla/git under the user's cache directory)")
	f.BoolVarP(&verbose, "verbose", "v", false, "log debug details")
	return cmd
}
