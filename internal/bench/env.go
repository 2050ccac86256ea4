// Package bench measures Flotilla's hub at fleet scale: a real hub (kube-apiserver, etcd and
// the `flotilla hub` process) and N simulated member agents whose member side is in memory.
// Every figure that involves members says they are simulated. `flotilla bench` runs it;
// test/bench keeps a small run in `make test`.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub"
	"flotilla.dev/flotilla/internal/proc"
	"flotilla.dev/flotilla/internal/testenv"
)

// Options shape one benchmark environment.
type Options struct {
	// Binary is the flotilla executable that runs the hub (and the real agent).
	Binary string
	// BinDir holds the Kubernetes binaries (default: testenv.DefaultBinDir()).
	BinDir string
	// Members is the number of real member clusters to start (the agent scenario needs one).
	Members int
	// Dir keeps the environment's data and logs (default: a temp dir, removed at the end).
	Dir string
	// ProfileDir, when set, receives CPU profiles of the hub (and of the API server when
	// FLOTILLA_APISERVER_PROFILING=1) taken during the timed fan-outs.
	ProfileDir string
	// Log receives progress lines (default: discarded).
	Log io.Writer
	// HubAsAdmin runs the hub with the API server's admin credentials (system:masters: no
	// RBAC evaluation, exempt from priority and fairness) instead of as its ServiceAccount,
	// to measure what those cost. The throttle scenario needs the ServiceAccount.
	HubAsAdmin bool
	// AgentsAsAdmin makes the simulated agents write with the admin credentials instead of
	// as their own ServiceAccounts, to measure what authentication, RBAC and priority and
	// fairness cost for agents' requests.
	AgentsAsAdmin bool
}

// Env is a running hub: its API server and etcd, and the hub controllers as a process.
type Env struct {
	T   *testenv.Env
	Hub *proc.Process
	// Client is an admin client of the hub API server, with a high rate limit; Clientset
	// is the same as client-go's typed clients (Leases, /metrics, profiles).
	Client    client.Client
	Clientset kubernetes.Interface
	Config    *rest.Config
	pprof     string
	metrics   string // the hub's /metrics address
	log       io.Writer
	opts      Options
}

// Start brings up the hub and waits until it serves Flotilla's API.
func Start(ctx context.Context, o Options) (e *Env, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	ctrllog.SetLogger(logr.Discard()) // the simulated agents' informers; the hub logs to its file
	if o.Binary == "" {
		return nil, fmt.Errorf("bench: no flotilla binary to run the hub")
	}
	t, err := testenv.Start(ctx, testenv.Options{Members: o.Members, BinDir: o.BinDir, Dir: o.Dir})
	if err != nil {
		return nil, fmt.Errorf("start the hub API server: %w (are the Kubernetes binaries built? run `make k8s-bin`)", err)
	}
	e = &Env{T: t, log: o.Log, opts: o}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	ports, err := proc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	e.pprof = fmt.Sprintf("127.0.0.1:%d", ports[2])
	e.metrics = fmt.Sprintf("127.0.0.1:%d", ports[0])
	kubeconfig := t.Hub.Kubeconfig
	if !o.HubAsAdmin {
		if kubeconfig, err = hubIdentity(ctx, t); err != nil {
			return nil, err
		}
	}
	// The hub runs with its shipped defaults (client rate limits included).
	e.Hub, err = proc.Start("flotilla-hub", o.Binary, []string{"hub", "--hub-kubeconfig", kubeconfig,
		"--leader-elect=false", "--webhook-bind-address=0", "--git-cache-dir", filepath.Join(t.Dir, "git"),
		"--metrics-bind-address", e.metrics, "--pprof-bind-address", e.pprof, "--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1])},
		filepath.Join(t.Dir, "flotilla-hub.log"), false)
	if err != nil {
		return nil, err
	}
	if err := proc.WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), e.Hub, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("the hub did not become ready: %w\n%s", err, proc.Tail(e.Hub.LogFile, 15))
	}
	e.Config = rest.CopyConfig(t.Hub.Config)
	e.Config.QPS, e.Config.Burst = 2000, 4000 // the simulated agents share this client
	if e.Client, err = client.New(e.Config, client.Options{Scheme: hub.Scheme()}); err != nil {
		return nil, err
	}
	if e.Clientset, err = kubernetes.NewForConfig(e.Config); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for { // the hub installs its CRDs at start
		if err = e.Client.List(ctx, &flv1.BundleList{}); err == nil {
			return e, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the hub API serves no Bundles after 2 min: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The hub's identity in the benchmark: the ServiceAccount a deployed hub runs as. The
// admin credentials of the private API server are in system:masters, which the API server's
// priority and fairness exempt from every limit; a deployed hub is not exempt (its requests
// fall in the workload-low priority level), and the throttle scenario limits it alone.
const (
	hubServiceAccountNamespace = hub.SystemNamespace
	hubServiceAccount          = "flotilla-hub"
)

// hubIdentity grants the hub's ServiceAccount cluster-admin on the private API server and
// writes a kubeconfig that acts as it (impersonation by the admin credentials, so no token
// is needed), returning its path.
func hubIdentity(ctx context.Context, t *testenv.Env) (string, error) {
	cs, err := kubernetes.NewForConfig(t.Hub.Config)
	if err != nil {
		return "", err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-bench-hub"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: hubServiceAccountNamespace, Name: hubServiceAccount}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("grant the hub's identity: %w", err)
	}
	cfg, err := clientcmd.LoadFromFile(t.Hub.Kubeconfig)
	if err != nil {
		return "", err
	}
	ns := hubServiceAccountNamespace
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + ns + ":" + hubServiceAccount
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
	}
	file := filepath.Join(t.Dir, "flotilla-hub.kubeconfig")
	return file, clientcmd.WriteToFile(*cfg, file)
}

// Stop ends every process of the environment and removes its data.
func (e *Env) Stop() {
	if e.Hub != nil {
		e.Hub.Kill()
	}
	e.T.Stop()
}

const roleHub = "hub controllers"

// Processes are the hub's processes whose footprint the benchmark reports.
func (e *Env) Processes() []Proc {
	return []Proc{{Role: roleHub, Pid: e.Hub.Pid}, {Role: "kube-apiserver", Pid: e.T.Hub.Processes[0].Pid}, {Role: "etcd", Pid: e.T.Etcd.Pid}}
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// hostname names the machine in the report.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
