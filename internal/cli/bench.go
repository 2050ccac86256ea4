package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/internal/agent"
	"flotilla.dev/flotilla/internal/bench"
	"flotilla.dev/flotilla/internal/testenv"
)

func newBenchCmd() *cobra.Command {
	o := bench.FleetOptions{}
	var sizes []int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench [scenario...]",
		Short: "Measure the hub at fleet scale against a real API server (simulated agents)",
		Long: `Start a private hub on this machine (kube-apiserver and etcd from the pinned Kubernetes
binaries, "make k8s-bin", and this binary's "flotilla hub"), join N simulated agents and
measure. A simulated agent does on the hub exactly what a real agent does (heartbeat Lease,
fact report, Work status after applying), as its own ServiceAccount, but its member side is
in memory; every figure that involves them says "simulated". Nothing outside the private hub
is touched.

Scenarios (default: all of them, in this order; join runs whenever a fleet is needed):
  join     N agents join at once: time until each cluster is Ready (p50, p99, total)
  fanout   first the physical limit: N Work updates of the same size written straight to the
           API server (the best of server-side apply and update, 32 and 128 at a time); then
           one Bundle change applied and reported by all N clusters (p50, p99, total; also when
           it reached the agents), its ratio to that limit, and the API server's count of
           writes per cluster by verb and resource
  rollout  a 3-wave rollout (eu, us, rest; no soak) of one change over the N clusters
  throttle one change, then one while the API server's priority and fairness admit one hub
           request at a time and answer the rest 429: the slowdown, the requests rejected,
           the hub reconciles retried, and that every cluster still applied the change
  idle     --bundles-per-cluster Bundles (10) on every cluster, agents only heartbeating
           (--heartbeat-interval) and reporting facts: CPU over --idle-duration and memory
           grown per cluster, per hub process; writes per cluster and minute
  agent    one real agent against a real member: memory and CPU idle, and while it applies
           a Bundle of 100 objects (flotilla-agent when it lies next to this binary)

Each size runs on a fresh hub. The design's targets are shown next to the figures they
judge. docs/performance.md has the figures of this machine and how they were made.`,
		Example: `  flotilla bench                               # every scenario, 100 clusters
  flotilla bench fanout --clusters 100,1000,10000
  flotilla bench idle --clusters 1000 --idle-duration 2m --json > idle.json
  flotilla bench agent`,
		ValidArgs: bench.Scenarios,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Scenarios = args
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.Binary = exe
			if _, err := os.Stat(filepath.Join(o.BinDir, "kube-apiserver")); err != nil {
				return fmt.Errorf("no kube-apiserver in %s: build the Kubernetes binaries first: make k8s-bin (or set --k8s-dir)", o.BinDir)
			}
			if o.ProfileDir != "" {
				if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
					return fmt.Errorf("--profile-dir: %w", err)
				}
			}
			o.Log = cmd.ErrOrStderr() // progress; the report goes to stdout
			rep, err := bench.Run(cmd.Context(), o, sizes)
			if rep != nil && len(rep.Results) > 0 {
				if asJSON {
					if jerr := rep.WriteJSON(cmd.OutOrStdout()); jerr != nil {
						return jerr
					}
				} else {
					rep.WriteTable(cmd.OutOrStdout())
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&sizes, "clusters", []int{100}, "fleet sizes to measure, each on a fresh hub (e.g. 100,1000,10000)")
	f.IntVar(&o.Runs, "runs", 3, "changes timed by fanout and rollout; the median run is reported")
	f.DurationVar(&o.IdleFor, "idle-duration", time.Minute, "how long idle (and the agent at rest) is sampled")
	f.IntVar(&o.BundlesPerCluster, "bundles-per-cluster", 10, "Bundles every cluster runs in the idle scenario")
	f.BoolVar(&o.HubAsAdmin, "hub-as-admin", false, "run the hub as system:masters (no RBAC evaluation, exempt from priority and fairness) instead of as its ServiceAccount, to measure what those cost; not with the throttle scenario")
	f.BoolVar(&o.AgentsAsAdmin, "agents-as-admin", false, "let the simulated agents write with the admin credentials instead of as their own ServiceAccounts (tokens issued by the hub API server), to measure what authentication, RBAC and priority and fairness cost for agents")
	f.DurationVar(&o.HeartbeatInterval, "heartbeat-interval", agent.DefaultHeartbeatInterval, "the simulated agents' heartbeat interval (the real agent's --heartbeat-interval)")
	f.StringVar(&o.BinDir, "k8s-dir", testenv.DefaultBinDir(), "directory of the pinned Kubernetes binaries ($FLOTILLA_K8S_DIR)")
	f.StringVar(&o.Dir, "keep-dir", "", "keep the private hub's data and logs (flotilla-hub.log, agents/) in this directory")
	f.StringVar(&o.ProfileDir, "profile-dir", "", "write CPU profiles of the hub taken during the timed fan-outs, and its heap at the end of idle, here (go tool pprof); with FLOTILLA_APISERVER_PROFILING=1 the API server's CPU profiles too")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON on stdout (progress goes to stderr)")
	return cmd
}
