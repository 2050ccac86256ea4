// Package e2e tests Flotilla end to end: the real flotilla binary (hub, agents, CLI) against
// real API servers with RBAC on, started once for the package.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"flotilla.dev/flotilla/internal/hub"
	"flotilla.dev/flotilla/internal/join"
	"flotilla.dev/flotilla/internal/proc"
	"flotilla.dev/flotilla/internal/testenv"
)

// Agents heartbeat every second; the hub's default grace is then 5 s.
const heartbeatInterval = time.Second

var (
	env      *testenv.Env
	binary   string // the flotilla binary under test
	stateDir string // where local agents are recorded
	hubC     client.Client
	hubProc  *proc.Process
	// hubMetrics is the URL of the hub's Prometheus metrics; hubWebhook the base URL of its Git webhook.
	hubMetrics, hubWebhook string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard()) // the test's own controller-runtime clients log nothing
	work, err := os.MkdirTemp("", "flotilla-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	binary, stateDir = filepath.Join(work, "flotilla"), filepath.Join(work, "state")
	build := exec.Command("go", "build", "-o", binary, "flotilla.dev/flotilla/cmd/flotilla")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build flotilla:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	env, err = testenv.Start(ctx, testenv.Options{Members: 9, NodesPerMember: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start test environment:", err)
		return 1
	}
	defer env.Stop()
	fmt.Fprintf(os.Stderr, "e2e: hub + 9 members (2 nodes each) ready in %s\n", time.Since(start).Round(time.Millisecond))
	defer stopLocalAgents()

	hubLog := filepath.Join(work, "hub.log")
	ports, err := proc.FreePorts(3)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	probe := fmt.Sprintf("127.0.0.1:%d", ports[0])
	hubMetrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])
	hubWebhook = fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	hubProc, err = proc.Start("hub", binary, []string{"hub", "--hub-kubeconfig", env.Hub.Kubeconfig,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--health-probe-bind-address", probe,
		"--webhook-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--git-cache-dir", filepath.Join(work, "git-cache")}, hubLog, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer hubProc.Kill()
	if err := proc.WaitHTTP(ctx, "http://"+probe+"/readyz", hubProc, time.Minute); err != nil {
		fmt.Fprintf(os.Stderr, "hub not ready: %v\n%s\n", err, proc.Tail(hubLog, 30))
		return 1
	}
	if hubC, err = client.New(env.Hub.Config, client.Options{Scheme: hub.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- hub log (tail) ---\n%s\n", proc.Tail(hubLog, 40))
	}
	return code
}

func stopLocalAgents() {
	agents, _ := join.LocalAgents(stateDir)
	for _, a := range agents {
		_, _ = join.StopLocalAgent(stateDir, a.Cluster, true)
	}
}

// flotilla runs the CLI against the hub and returns its combined output.
func flotilla(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"--hub-kubeconfig", env.Hub.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "FLOTILLA_STATE_DIR="+stateDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustFlotilla(t *testing.T, args ...string) string {
	t.Helper()
	out, err := flotilla(t, args...)
	if err != nil {
		t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

var (
	joinMu sync.Mutex
	joined = map[string]bool{}
)

// memberLabels gives each test member a distinct, realistic label set.
func memberLabels(i int) string {
	envs := []string{"dev", "staging", "prod", "prod", "prod", "prod", "prod", "prod", "prod"}
	regions := []string{"eu-west", "us-east", "eu-west", "us-east", "ap-south", "ap-south", "us-east", "ap-south", "eu-west"}
	return fmt.Sprintf("env=%s,region=%s,flotilla.dev/ring=%d", envs[i], regions[i], i)
}

// ensureJoined joins member i (0-based) with a local agent, once per test binary.
func ensureJoined(t *testing.T, i int) string {
	t.Helper()
	m := env.Members[i]
	joinMu.Lock()
	defer joinMu.Unlock()
	if !joined[m.Name] {
		mustFlotilla(t, "join", m.Name, "--member-kubeconfig", m.Kubeconfig, "--local",
			"--labels", memberLabels(i), "--owner", "team-"+m.Name,
			"--agent-arg=--heartbeat-interval="+heartbeatInterval.String(), "--agent-arg=--report-interval=2s")
		joined[m.Name] = true
	}
	return m.Name
}

func memberClient(t *testing.T, i int) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(env.Members[i].Config)
}

// tokenConfig is a hub config that authenticates with a bearer token only.
func tokenConfig(token string) *rest.Config {
	return &rest.Config{Host: env.Hub.URL, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Hub.Config.CAData}}
}

// eventually polls f until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
