package cli

import (
	"time"

	"github.com/spf13/cobra"

	"flotilla.dev/flotilla/internal/join"
	"flotilla.dev/flotilla/internal/version"
)

func newJoinCmd(g *globals) *cobra.Command {
	o := join.Options{}
	var labels string
	cmd := &cobra.Command{
		Use:   "join NAME --member-kubeconfig FILE",
		Short: "Add a cluster to the fleet and install its agent",
		Long: `Add a Kubernetes cluster to the fleet under NAME:
  1. check every input (name, labels, both kubeconfigs, both API servers reachable, no
     cluster of that name yet, the member not joined elsewhere);
  2. create and accept its MemberCluster on the hub;
  3. wait for the hub to create namespace cluster-NAME and the agent's ServiceAccount;
  4. issue a time-limited hub token for that ServiceAccount (the agent rotates it);
  5. install the agent on the member: namespace flotilla-system, a Secret with the hub
     credentials, RBAC, and a Deployment — or with --local, a process on this machine;
  6. wait until the agent heartbeats and the cluster is Ready.
If a step fails, the steps already done are undone.`,
		Example: `  flotilla join prod-eu-1 --member-kubeconfig prod-eu-1.kubeconfig --labels env=prod,region=eu --owner team-payments
  flotilla join dev-1 --member-kubeconfig dev.kubeconfig --local`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			o.Name = args[0]
			if err := join.ValidateName(o.Name); err != nil {
				return err
			}
			if o.Labels, err = join.ParseLabels(labels); err != nil {
				return err
			}
			if o.Hub, err = g.hubConfig(); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			cmd.Printf("Joining %s to the hub at %s\n", o.Name, o.Hub.Host)
			return join.Join(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.MemberKubeconfig, "member-kubeconfig", "", "kubeconfig with admin access to the cluster to join (required)")
	f.StringVar(&o.MemberContext, "member-context", "", "context in the member kubeconfig")
	f.StringVar(&labels, "labels", "", "labels of the cluster, k=v,k2=v2 (e.g. env=prod,region=eu,flotilla.dev/ring=2)")
	f.StringVar(&o.Owner, "owner", "", "team or person responsible for the cluster")
	f.StringVar(&o.HubServer, "hub-server", "", "hub address as the member reaches it (default: the server of the hub kubeconfig)")
	f.DurationVar(&o.TokenTTL, "token-ttl", join.DefaultTokenTTL, "lifetime of the agent's hub token (rotated at 80%; at least 10m)")
	f.BoolVar(&o.Local, "local", false, "run the agent as a local process instead of a Deployment on the member")
	f.StringVar(&o.StateDir, "state-dir", "", "where local agents are recorded (default $FLOTILLA_STATE_DIR or ~/.local/state/flotilla)")
	f.StringVar(&o.Image, "image", "ghcr.io/flotilla-dev/flotilla:"+version.String(), "agent image for the Deployment")
	f.StringSliceVar(&o.AgentArgs, "agent-arg", nil, "extra agent flag, repeatable (e.g. --agent-arg=--heartbeat-interval=5s)")
	f.DurationVar(&o.Wait, "wait", 2*time.Minute, "how long to wait for the agent to connect (0: do not wait)")
	_ = cmd.MarkFlagRequired("member-kubeconfig")
	return cmd
}

func newUnjoinCmd(g *globals) *cobra.Command {
	o := join.UnjoinOptions{}
	cmd := &cobra.Command{
		Use:   "unjoin NAME",
		Short: "Remove a cluster from the fleet and revoke its agent's credentials",
		Long: `Remove a cluster from the fleet: delete its MemberCluster, which makes the hub delete the
agent's ServiceAccount (every token issued for it stops working at once) and its namespace
cluster-NAME; stop a local agent; and remove the agent's objects from the member, using
--member-kubeconfig or the kubeconfig that "join --local" recorded.`,
		Example: `  flotilla unjoin prod-eu-1 --member-kubeconfig prod-eu-1.kubeconfig`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			o.Name = args[0]
			if o.Hub, err = g.hubConfig(); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			cmd.Printf("Unjoining %s\n", o.Name)
			if err := join.Unjoin(cmd.Context(), o); err != nil {
				return err
			}
			cmd.Printf("Cluster %s left the fleet\n", o.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.MemberKubeconfig, "member-kubeconfig", "", "kubeconfig of the member, to remove the agent (default: as recorded by join --local)")
	f.StringVar(&o.MemberContext, "member-context", "", "context in the member kubeconfig")
	f.StringVar(&o.StateDir, "state-dir", "", "where local agents are recorded (default $FLOTILLA_STATE_DIR or ~/.local/state/flotilla)")
	return cmd
}
