package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/internal/hub"
	"flotilla.dev/flotilla/internal/lab"
)

func newLabCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run a local fleet on this machine (hub + member clusters, no containers needed)",
		Long: `A local fleet for trying Flotilla and for development: a hub and N member clusters built
from the pinned Kubernetes binaries ("make k8s-bin"), with kwok simulating nodes and pods, the
hub controllers, and one agent per member, all running as background processes.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", lab.DefaultDir(), "lab directory: state, kubeconfigs, logs and data ($FLOTILLA_LAB_DIR)")

	o := lab.Options{}
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the lab (safe to run again)",
		Example: `  flotilla lab up
  flotilla lab up --clusters 5 --dir /tmp/fleet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Dir, o.Out = dir, cmd.OutOrStdout()
			return lab.Up(cmd.Context(), o)
		},
	}
	up.Flags().IntVar(&o.Clusters, "clusters", 3, "number of member clusters")
	up.Flags().DurationVar(&o.HeartbeatInterval, "heartbeat-interval", 5*time.Second, "agents' heartbeat interval")

	down := &cobra.Command{
		Use:   "down",
		Short: "Stop every lab process and remove the lab directory",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return lab.Down(dir, cmd.OutOrStdout()) },
	}

	status := &cobra.Command{
		Use:   "status",
		Short: "Show the lab's processes and clusters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := lab.Load(dir)
			if err != nil {
				return fmt.Errorf("no lab in %s (start one with `flotilla lab up`): %w", dir, err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Lab in %s, started %s ago\n\n", st.Dir, humanAge(time.Since(st.StartedAt)))
			tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "PROCESS\tPID\tSTATE\tLOG")
			down := 0
			for _, p := range lab.Processes(dir, st) {
				state := "running"
				if !p.Running {
					state, down = "STOPPED", down+1
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Name, p.Pid, state, p.LogFile)
			}
			_ = tw.Flush()
			fmt.Fprintln(w)
			cfg, err := clientcmd.BuildConfigFromFlags("", st.HubKubeconfig)
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: hub.Scheme()})
			if err != nil {
				return err
			}
			list, err := listClusters(cmd.Context(), c, labels.Everything(), nil)
			if err != nil {
				return fmt.Errorf("hub: %w", err)
			}
			if err := printClusterTable(w, list.Items, lastSeen(cmd.Context(), c), false, time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(w, "\nexport KUBECONFIG=%s\n", st.HubKubeconfig)
			if down > 0 {
				return fmt.Errorf("%d lab processes are not running: `flotilla lab up` restarts the lab", down)
			}
			return nil
		},
	}

	kubeconfig := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the lab hub's kubeconfig",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), lab.HubKubeconfig(dir)) },
	}
	cmd.AddCommand(up, down, status, kubeconfig)
	return cmd
}
