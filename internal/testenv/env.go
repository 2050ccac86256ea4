// Package testenv starts real Kubernetes control planes for tests and the lab: one shared
// etcd, a hub API server (with the namespace and garbage-collector controllers, so that
// deletions finish) and N member clusters, each with kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok simulating nodes, so that pods are really scheduled and Ready.
//
// Binaries come from the cache that `make k8s-bin` fills (FLOTILLA_K8S_DIR).
package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"flotilla.dev/flotilla/internal/proc"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Version is the key of the binary cache; it must match hack/k8s/VERSION.
const Version = "v1.37.2-etcd3.7.0-kwok0.8.0-b2"

// Options shape an environment.
type Options struct {
	// Members is the number of member clusters (0 is valid: hub only).
	Members int
	// NodesPerMember is the number of kwok nodes in each member (default 1).
	NodesPerMember int
	// Dir holds data, certificates, kubeconfigs and logs. Default: a new temp dir, removed
	// by Stop. A Dir given by the caller is kept.
	Dir string
	// BinDir holds the Kubernetes binaries. Default: FLOTILLA_K8S_DIR or the cache.
	BinDir string
	// Detached processes get their own session and outlive this program (the lab).
	// Attached ones (tests) are killed when this program ends, however it ends.
	Detached bool
	// MemberNames overrides the default member names member-1..N.
	MemberNames []string
}

// Cluster is one running control plane.
type Cluster struct {
	Name string
	// URL of the API server, https://127.0.0.1:PORT.
	URL string
	// Kubeconfig is a file with admin credentials (system:masters).
	Kubeconfig string
	// Config is an admin rest config.
	Config *rest.Config
	// Processes of this cluster, API server first.
	Processes []*proc.Process
	dir       string
}

// Env is a running environment.
type Env struct {
	Dir     string
	BinDir  string
	Etcd    *proc.Process
	Hub     *Cluster
	Members []*Cluster

	pki      *pki
	etcdURL  string
	ownsDir  bool
	detached bool
	stopOnce sync.Once
	mu       sync.Mutex
}

// DefaultBinDir is where `make k8s-bin` puts the binaries.
func DefaultBinDir() string {
	if d := os.Getenv("FLOTILLA_K8S_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "flotilla", "k8s", Version)
}

// Start brings up etcd, the hub and the members, and waits until every API server is ready
// and every member node is Ready. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if opts.NodesPerMember == 0 {
		opts.NodesPerMember = 1
	}
	if opts.BinDir == "" {
		opts.BinDir = DefaultBinDir()
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := binary(opts.BinDir, b); err != nil {
			return nil, err
		}
	}
	e := &Env{BinDir: opts.BinDir, detached: opts.Detached}
	if opts.Dir == "" {
		sweepStaleDirs()
		if e.Dir, err = os.MkdirTemp("", tempPrefix); err != nil {
			return nil, err
		}
		e.ownsDir = true
		_ = os.WriteFile(filepath.Join(e.Dir, "owner.pid"), []byte(fmt.Sprint(os.Getpid())), 0o644)
	} else {
		e.Dir = opts.Dir
		if err := os.MkdirAll(e.Dir, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if e.pki, err = newPKI(e.Dir); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ { // a picked port may be taken before etcd binds it
		err = e.startEtcd(ctx)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		e.Etcd.Kill()
		_ = os.RemoveAll(filepath.Join(e.Dir, "etcd"))
	}
	if err != nil {
		return nil, err
	}

	names := opts.MemberNames
	for i := len(names); i < opts.Members; i++ {
		names = append(names, fmt.Sprintf("member-%d", i+1))
	}
	// API servers start in parallel: each takes a few seconds, mostly waiting.
	var wg sync.WaitGroup
	errs := make([]error, len(names)+1)
	clusters := make([]*Cluster, len(names)+1)
	for i, name := range append([]string{"hub"}, names...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clusters[i], errs[i] = e.startCluster(ctx, name, i == 0, opts.NodesPerMember)
		}()
	}
	wg.Wait()
	e.Hub, e.Members = clusters[0], clusters[1:]
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.Detached {
		if err := e.writeState(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) startEtcd(ctx context.Context) error {
	ports, err := proc.FreePorts(2)
	if err != nil {
		return err
	}
	client, peer := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	dataDir := filepath.Join(e.Dir, "etcd")
	bin, _ := binary(e.BinDir, "etcd")
	p, err := proc.Start("etcd", bin, []string{
		"--name", "flotilla", "--data-dir", dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "flotilla=" + peer,
		// Test data is disposable: skipping fsync makes every write much cheaper.
		"--unsafe-no-fsync", "--quota-backend-bytes", fmt.Sprint(8 << 30),
		"--log-level", "warn",
	}, filepath.Join(e.Dir, "etcd.log"), e.detached)
	if err != nil {
		return err
	}
	e.Etcd, e.etcdURL = p, client
	return waitFor(ctx, 30*time.Second, p, func(ctx context.Context) error {
		return httpGet(ctx, client+"/health", nil)
	})
}

// Stop kills every process hard and removes the temp dir the environment created.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		var all []*proc.Process
		for _, c := range append([]*Cluster{e.Hub}, e.Members...) {
			if c != nil {
				all = append(all, c.Processes...)
			}
		}
		all = append(all, e.Etcd)
		var wg sync.WaitGroup
		for _, p := range all {
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.Kill() }()
		}
		wg.Wait()
		if e.ownsDir {
			_ = os.RemoveAll(e.Dir)
		}
	})
}

// AllProcesses lists etcd and every cluster's processes.
func (e *Env) AllProcesses() []*proc.Process {
	ps := []*proc.Process{e.Etcd}
	for _, c := range append([]*Cluster{e.Hub}, e.Members...) {
		if c != nil {
			ps = append(ps, c.Processes...)
		}
	}
	return ps
}

const tempPrefix = "flotilla-testenv-"

// sweepStaleDirs removes temp dirs left by environments whose owner process died without
// running Stop (a panic or a kill); their children died with them (parent-death signal).
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err == nil && !proc.Alive(pid) {
			_ = os.RemoveAll(d)
		}
	}
}

// writeKubeconfig writes an admin kubeconfig for one API server.
func (e *Env) writeKubeconfig(file, name, url string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: e.pki.caCert}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.pki.adminCert, ClientKeyData: e.pki.adminKey}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, file)
}

// State is what a detached environment records on disk so that a later command (lab status,
// lab down) can find its processes.
type State struct {
	Dir       string         `json:"dir"`
	Etcd      ProcessState   `json:"etcd"`
	Clusters  []ClusterState `json:"clusters"`
	StartedAt time.Time      `json:"startedAt"`
}

// ClusterState records one cluster of a detached environment.
type ClusterState struct {
	Name       string         `json:"name"`
	URL        string         `json:"url"`
	Kubeconfig string         `json:"kubeconfig"`
	Processes  []ProcessState `json:"processes"`
}

// ProcessState records one process of a detached environment.
type ProcessState struct {
	Name    string `json:"name"`
	Pid     int    `json:"pid"`
	LogFile string `json:"logFile"`
}

// StateFile is the name of the state file in a detached environment's Dir.
const StateFile = "testenv.json"

func (e *Env) writeState() error {
	s := State{Dir: e.Dir, Etcd: procState(e.Etcd), StartedAt: time.Now()}
	for _, c := range append([]*Cluster{e.Hub}, e.Members...) {
		cs := ClusterState{Name: c.Name, URL: c.URL, Kubeconfig: c.Kubeconfig}
		for _, p := range c.Processes {
			cs.Processes = append(cs.Processes, procState(p))
		}
		s.Clusters = append(s.Clusters, cs)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.Dir, StateFile), b, 0o644)
}

func procState(p *proc.Process) ProcessState {
	return ProcessState{Name: p.Name, Pid: p.Pid, LogFile: p.LogFile}
}

// ReadState reads the state of a detached environment, or returns an error wrapping
// os.ErrNotExist when there is none in dir.
func ReadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, StateFile), err)
	}
	return &s, nil
}

// Processes lists every process recorded in a state, etcd last (it serves the others).
func (s *State) Processes() []ProcessState {
	var ps []ProcessState
	for _, c := range s.Clusters {
		ps = append(ps, c.Processes...)
	}
	return append(ps, s.Etcd)
}

// StopAPIServer kills a cluster's API server hard, as an outage would.
func (c *Cluster) StopAPIServer() { c.Processes[0].Kill() }

// StartAPIServer starts a stopped API server again on the same port, with the same flags
// and storage, and waits until it is ready.
func (e *Env) StartAPIServer(ctx context.Context, c *Cluster) error {
	old := c.Processes[0]
	if !old.Exited() {
		return fmt.Errorf("%s is still running", old.Name)
	}
	p, err := proc.Start(old.Name, old.Path, old.Args, old.LogFile, e.detached)
	if err != nil {
		return err
	}
	c.Processes[0] = p
	return waitFor(ctx, 60*time.Second, p, func(ctx context.Context) error {
		return httpGet(ctx, c.URL+"/readyz", e.pki)
	})
}
