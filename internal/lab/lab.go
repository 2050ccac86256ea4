// Package lab runs a local fleet on one machine: a hub and N member clusters from the pinned
// Kubernetes binaries (members simulate nodes and pods with kwok), the hub controllers, and
// one local agent per member, all as background processes recorded in one directory.
package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"flotilla.dev/flotilla/internal/join"
	"flotilla.dev/flotilla/internal/proc"
	"flotilla.dev/flotilla/internal/testenv"
)

// Options of `lab up`.
type Options struct {
	Dir      string
	Clusters int
	// Binary is the flotilla binary that runs the hub and the agents (default: this one).
	Binary string
	// HeartbeatInterval of the lab's agents.
	HeartbeatInterval time.Duration
	Out               io.Writer
}

// State is recorded in DIR/lab.json.
type State struct {
	Dir           string    `json:"dir"`
	HubKubeconfig string    `json:"hubKubeconfig"`
	HubPid        int       `json:"hubPid"`
	HubLog        string    `json:"hubLog"`
	MetricsAddr   string    `json:"metricsAddr"`
	Clusters      []Member  `json:"clusters"`
	StartedAt     time.Time `json:"startedAt"`
}

// Member is one lab member cluster.
type Member struct {
	Name       string            `json:"name"`
	Kubeconfig string            `json:"kubeconfig"`
	Labels     map[string]string `json:"labels"`
	Owner      string            `json:"owner"`
}

const stateFile = "lab.json"

// DefaultDir is where the lab lives unless --dir says otherwise.
func DefaultDir() string {
	if d := os.Getenv("FLOTILLA_LAB_DIR"); d != "" {
		return d
	}
	return filepath.Join(join.DefaultStateDir(), "lab")
}

// HubKubeconfig is the path of the lab hub's kubeconfig.
func HubKubeconfig(dir string) string { return filepath.Join(dir, "hub.kubeconfig") }

// Plan names and labels the members: ring 0 is dev, ring 1 staging, ring 2 the first
// production cluster (a canary), ring 3 the rest of production; regions rotate.
func Plan(n int) []Member {
	regions := []string{"eu-west", "us-east", "ap-south"}
	short := map[string]string{"eu-west": "eu", "us-east": "us", "ap-south": "ap"}
	owners := []string{"team-platform", "team-payments", "team-search"}
	perEnv := map[string]int{}
	out := make([]Member, n)
	for i := range n {
		ring := min(i, 3)
		env := []string{"dev", "staging", "prod", "prod"}[ring]
		region := regions[i%len(regions)]
		perEnv[env+region]++
		out[i] = Member{
			Name: fmt.Sprintf("%s-%s-%d", env, short[region], perEnv[env+region]),
			Labels: map[string]string{"env": env, "region": region, "provider": "kwok",
				"flotilla.dev/ring": strconv.Itoa(ring)},
			Owner: owners[i%len(owners)],
		}
	}
	return out
}

// Up starts the lab, or reports that it already runs. A lab left half-running (a process
// died) is stopped and started afresh.
func Up(ctx context.Context, o Options) (err error) {
	if o.Clusters < 1 {
		return fmt.Errorf("--clusters must be at least 1")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = 5 * time.Second
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return err
		}
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return err
	}
	if st, err := Load(o.Dir); err == nil {
		if dead := deadProcesses(o.Dir, st); len(dead) == 0 {
			fmt.Fprintf(o.Out, "The lab in %s is already running (%d clusters). `flotilla lab status` shows it; `flotilla lab down` stops it.\n", o.Dir, len(st.Clusters))
			return nil
		} else {
			fmt.Fprintf(o.Out, "The lab in %s is partly down (%v); restarting it.\n", o.Dir, dead)
		}
		if err := Down(o.Dir, o.Out); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(o.Out, "lab up failed; stopping what was started in %s\n", o.Dir)
			_ = Down(o.Dir, io.Discard)
		}
	}()

	members := Plan(o.Clusters)
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	start := time.Now()
	fmt.Fprintf(o.Out, "Starting a hub and %d member clusters (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) ...\n", o.Clusters)
	env, err := testenv.Start(ctx, testenv.Options{Members: o.Clusters, Dir: filepath.Join(o.Dir, "env"), Detached: true, MemberNames: names})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "  control planes ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	st := &State{Dir: o.Dir, HubKubeconfig: HubKubeconfig(o.Dir), HubLog: filepath.Join(o.Dir, "hub.log"), StartedAt: time.Now()}
	if err := copyFile(env.Hub.Kubeconfig, st.HubKubeconfig); err != nil {
		return err
	}
	for i, m := range members {
		m.Kubeconfig = filepath.Join(o.Dir, m.Name+".kubeconfig")
		if err := copyFile(env.Members[i].Kubeconfig, m.Kubeconfig); err != nil {
			return err
		}
		st.Clusters = append(st.Clusters, m)
	}
	ports, err := proc.FreePorts(2)
	if err != nil {
		return err
	}
	st.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	hub, err := proc.Start("hub", o.Binary, []string{"hub", "--hub-kubeconfig", st.HubKubeconfig,
		"--metrics-bind-address", st.MetricsAddr, "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1])},
		st.HubLog, true)
	if err != nil {
		return err
	}
	st.HubPid = hub.Pid
	if err := st.save(); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Started the hub controllers (pid %d, log %s)\n", hub.Pid, st.HubLog)
	if err := proc.WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), hub, time.Minute); err != nil {
		return fmt.Errorf("the hub did not become ready: %w\n%s", err, proc.Tail(st.HubLog, 15))
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", st.HubKubeconfig)
	if err != nil {
		return err
	}
	for _, m := range st.Clusters {
		fmt.Fprintf(o.Out, "Joining %s (%s)\n", m.Name, join.FormatLabels(m.Labels))
		err := join.Join(ctx, join.Options{
			Name: m.Name, Labels: m.Labels, Owner: m.Owner, Hub: cfg, MemberKubeconfig: m.Kubeconfig,
			Local: true, Binary: o.Binary, StateDir: o.Dir, Wait: 2 * time.Minute, Out: o.Out,
			AgentArgs: []string{"--heartbeat-interval=" + o.HeartbeatInterval.String()},
		})
		if err != nil {
			if hub.Exited() {
				err = fmt.Errorf("%w\nthe hub exited:\n%s", err, proc.Tail(st.HubLog, 15))
			}
			return fmt.Errorf("join %s: %w", m.Name, err)
		}
	}
	fmt.Fprintf(o.Out, `
The lab is up in %s (%s).

Try:
  export KUBECONFIG=%s
  flotilla get clusters
  flotilla get clusters -l env=prod -o wide
  kubectl get memberclusters
  flotilla lab status
Member kubeconfigs are in %s/<name>.kubeconfig. Stop everything with: flotilla lab down --dir %s
`, o.Dir, time.Since(start).Round(100*time.Millisecond), st.HubKubeconfig, o.Dir, o.Dir)
	return nil
}

// Down stops every lab process hard, waits until they are gone (so their ports are free)
// and removes the lab directory.
func Down(dir string, out io.Writer) error {
	dir, _ = filepath.Abs(dir)
	st, labErr := Load(dir)
	_, envErr := testenv.ReadState(filepath.Join(dir, "env"))
	if labErr != nil && envErr != nil {
		if errors.Is(labErr, os.ErrNotExist) && errors.Is(envErr, os.ErrNotExist) {
			fmt.Fprintf(out, "No lab in %s.\n", dir)
			return nil
		}
		return errors.Join(labErr, envErr)
	}
	procs := Processes(dir, st)
	stopped := 0
	for _, p := range procs {
		if p.Running {
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			stopped++
		}
	}
	for _, p := range procs {
		if !proc.WaitGone(p.Pid, 15*time.Second) {
			return fmt.Errorf("%s (pid %d) did not exit", p.Name, p.Pid)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "Stopped %d lab processes and removed %s.\n", stopped, dir)
	return nil
}

// Load reads a lab's state.
func Load(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	st := &State{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.Dir, stateFile), b, 0o644)
}

// ProcessStatus is one lab process and whether it runs.
type ProcessStatus struct {
	Name    string
	Pid     int
	Running bool
	LogFile string
}

// Processes lists the lab's processes: control planes, hub (when st is known), agents.
func Processes(dir string, st *State) []ProcessStatus {
	var out []ProcessStatus
	if envSt, err := testenv.ReadState(filepath.Join(dir, "env")); err == nil {
		for _, p := range envSt.Processes() {
			out = append(out, ProcessStatus{p.Name, p.Pid, proc.Alive(p.Pid), p.LogFile})
		}
	}
	if st != nil {
		out = append(out, ProcessStatus{"hub", st.HubPid, proc.Alive(st.HubPid), st.HubLog})
	}
	agents, _ := join.LocalAgents(dir)
	for _, a := range agents {
		out = append(out, ProcessStatus{"agent/" + a.Cluster, a.Pid, proc.Alive(a.Pid), a.LogFile})
	}
	return out
}

func deadProcesses(dir string, st *State) []string {
	var dead []string
	for _, p := range Processes(dir, st) {
		if !p.Running {
			dead = append(dead, p.Name)
		}
	}
	return dead
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
