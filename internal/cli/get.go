package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/join"
)

func newGetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List fleet objects",
	}
	var selector, output string
	clusters := &cobra.Command{
		Use:     "clusters [NAME...]",
		Aliases: []string{"cluster", "mc"},
		Short:   "List the member clusters with their health and capacity",
		Long: `List the fleet's member clusters: READY (the agent heartbeats within the grace period),
the Kubernetes version, ready/total nodes, CPU and memory as allocatable / requested by pods,
the owner, and when the agent was last heard from.`,
		Example: `  flotilla get clusters
  flotilla get clusters -l env=prod,region=eu -o wide
  flotilla get clusters prod-eu-1 -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "wide", "yaml", "json":
			default:
				return fmt.Errorf("unknown output format %q: use wide, yaml or json", output)
			}
			sel, err := labels.Parse(selector)
			if err != nil {
				return fmt.Errorf("invalid selector %q: %w", selector, err)
			}
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			list, err := listClusters(cmd.Context(), c, sel, args)
			if err != nil {
				return err
			}
			switch output {
			case "yaml", "json":
				return printObjects(cmd.OutOrStdout(), output, list)
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No clusters found.")
				return nil
			}
			seen := lastSeen(cmd.Context(), c)
			return printClusterTable(cmd.OutOrStdout(), list.Items, seen, output == "wide", time.Now())
		},
	}
	clusters.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. env=prod,region in (eu,us)")
	clusters.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json")
	cmd.AddCommand(clusters, newGetBundlesCmd(g))
	return cmd
}

func listClusters(ctx context.Context, c client.Client, sel labels.Selector, names []string) (*flv1.MemberClusterList, error) {
	list := &flv1.MemberClusterList{}
	if err := c.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the hub has no MemberCluster API: is `flotilla hub` installed there?")
		}
		return nil, fmt.Errorf("list clusters: %w", err)
	}
	if len(names) > 0 {
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		items := list.Items[:0]
		for _, mc := range list.Items {
			if want[mc.Name] {
				items = append(items, mc)
				delete(want, mc.Name)
			}
		}
		list.Items = items
		if len(want) > 0 {
			missing := make([]string, 0, len(want))
			for n := range want {
				missing = append(missing, n)
			}
			sort.Strings(missing)
			return nil, fmt.Errorf("no such cluster: %s", strings.Join(missing, ", "))
		}
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	list.APIVersion, list.Kind = "v1", "List"
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = flv1.GroupVersion.String(), "MemberCluster"
	}
	return list, nil
}

// lastSeen reads the heartbeat Leases, which are fresher than status.lastHeartbeatTime.
// Without permission to list them it returns nothing and status is used.
func lastSeen(ctx context.Context, c client.Client) map[string]time.Time {
	leases := &coordinationv1.LeaseList{}
	out := map[string]time.Time{}
	if err := c.List(ctx, leases, client.HasLabels{flv1.LabelCluster}); err != nil {
		return out
	}
	for _, l := range leases.Items {
		if l.Name == flv1.HeartbeatLeaseName && l.Spec.RenewTime != nil {
			out[l.Labels[flv1.LabelCluster]] = l.Spec.RenewTime.Time
		}
	}
	return out
}

func printObjects(w io.Writer, format string, obj any) error {
	var b []byte
	var err error
	if format == "json" {
		b, err = json.MarshalIndent(obj, "", "    ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(obj)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func printClusterTable(w io.Writer, items []flv1.MemberCluster, seen map[string]time.Time, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	header := "NAME\tREADY\tK8S VERSION\tNODES\tCPU (ALLOC / REQ)\tMEMORY (ALLOC / REQ)\tOWNER\tLAST SEEN"
	if wide {
		header += "\tAGENT\tLABELS\tMESSAGE"
	}
	fmt.Fprintln(tw, header)
	for _, mc := range items {
		ready, msg := "Unknown", ""
		if c := meta.FindStatusCondition(mc.Status.Conditions, flv1.ConditionReady); c != nil {
			ready, msg = string(c.Status), c.Message
			if c.Status == "False" {
				ready = c.Reason
			}
		}
		nodes, cpu, mem := "-", "-", "-"
		if n := mc.Status.Nodes; n != nil {
			nodes = fmt.Sprintf("%d/%d", n.Ready, n.Total)
		}
		if r := mc.Status.Resources; r != nil {
			cpu = formatCPU(r.Allocatable[corev1.ResourceCPU]) + " / " + formatCPU(r.Requested[corev1.ResourceCPU])
			mem = formatMemory(r.Allocatable[corev1.ResourceMemory]) + " / " + formatMemory(r.Requested[corev1.ResourceMemory])
		}
		last := "never"
		t, ok := seen[mc.Name]
		if !ok && mc.Status.LastHeartbeatTime != nil {
			t, ok = mc.Status.LastHeartbeatTime.Time, true
		}
		if ok {
			last = humanAge(now.Sub(t)) + " ago"
		}
		row := []string{mc.Name, ready, orDash(mc.Status.KubernetesVersion), nodes, cpu, mem, orDash(mc.Spec.Owner), last}
		if wide {
			row = append(row, orDash(mc.Status.AgentVersion), orDash(join.FormatLabels(mc.Labels)), orDash(msg))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatCPU prints cores with up to two decimals: 16, 0.25, 1.5.
func formatCPU(q resource.Quantity) string {
	return strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
}

// formatMemory prints binary units with one decimal: 64Gi, 512Mi, 1.5Gi.
func formatMemory(q resource.Quantity) string {
	v := float64(q.Value())
	for _, u := range []struct {
		s string
		f float64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if v >= u.f {
			return strconv.FormatFloat(float64(int64(v/u.f*10+0.5))/10, 'f', -1, 64) + u.s
		}
	}
	return strconv.FormatInt(q.Value(), 10)
}

func humanAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}
