package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"flotilla.dev/flotilla/internal/proc"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Controllers each kind of cluster runs. The hub stores objects and deletes namespaces;
// members also run workloads (node-lifecycle is needed, or new nodes keep the not-ready taint).
var (
	hubControllers    = "namespace-controller,garbage-collector-controller"
	memberControllers = "deployment-controller,replicaset-controller,namespace-controller," +
		"garbage-collector-controller,serviceaccount-controller,node-lifecycle-controller," +
		"root-ca-certificate-publisher-controller,statefulset-controller,daemonset-controller," +
		"job-controller,pod-garbage-collector-controller,taint-eviction-controller"
)

// kwok stages: nodes become Ready and keep their lease fresh; pods become Ready.
var kwokStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// Node size of every simulated node.
var (
	NodeCPU    = resource.MustParse("16")
	NodeMemory = resource.MustParse("64Gi")
	NodePods   = resource.MustParse("110")
)

// startCluster starts one cluster, trying again on fresh ports when a port it picked was
// taken in the moment between choosing and binding it (other tests run on this machine).
func (e *Env) startCluster(ctx context.Context, name string, hub bool, nodes int) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := e.startClusterOnce(ctx, name, hub, nodes)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
		if c != nil {
			for _, p := range c.Processes {
				p.Kill()
			}
		}
	}
}

func (e *Env) startClusterOnce(ctx context.Context, name string, hub bool, nodes int) (*Cluster, error) {
	dir := filepath.Join(e.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := proc.FreePorts(2)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Name: name, URL: fmt.Sprintf("https://127.0.0.1:%d", ports[0]), dir: dir,
		Kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := e.writeKubeconfig(c.Kubeconfig, name, c.URL); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, err
	}
	c.Config.QPS, c.Config.Burst = 200, 400
	saPub, saKey, err := writeServiceAccountKeys(dir)
	if err != nil {
		return nil, err
	}
	bin, _ := binary(e.BinDir, "kube-apiserver")
	api, err := proc.Start(name+"/kube-apiserver", bin, []string{
		"--etcd-servers", e.etcdURL, "--etcd-prefix", "/" + name,
		"--secure-port", fmt.Sprint(ports[0]), "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--tls-cert-file", e.pki.serveCertFile, "--tls-private-key-file", e.pki.serveKeyFile,
		"--client-ca-file", e.pki.caFile,
		"--service-account-issuer", "https://" + name + ".flotilla.test",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--authorization-mode", "RBAC",
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--endpoint-reconciler-type", "none",
		"--allow-privileged",
		// FLOTILLA_APISERVER_PROFILING=1 serves /debug/pprof, to profile a benchmark's API server.
		"--profiling=" + fmt.Sprint(os.Getenv("FLOTILLA_APISERVER_PROFILING") != ""),
	}, filepath.Join(dir, "kube-apiserver.log"), e.detached)
	if err != nil {
		return nil, err
	}
	c.Processes = append(c.Processes, api)
	if err := waitFor(ctx, 60*time.Second, api, func(ctx context.Context) error {
		return httpGet(ctx, c.URL+"/readyz", e.pki)
	}); err != nil {
		return c, fmt.Errorf("%s: kube-apiserver not ready: %w", name, err)
	}

	controllers := memberControllers
	if hub {
		controllers = hubControllers
	}
	bin, _ = binary(e.BinDir, "kube-controller-manager")
	kcm, err := proc.Start(name+"/kube-controller-manager", bin, []string{
		"--kubeconfig", c.Kubeconfig, "--controllers", controllers,
		"--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file", saKey, "--root-ca-file", e.pki.caFile,
		"--use-service-account-credentials=false",
		"--concurrent-gc-syncs", "5",
	}, filepath.Join(dir, "kube-controller-manager.log"), e.detached)
	if err != nil {
		return c, err
	}
	c.Processes = append(c.Processes, kcm)
	if hub {
		return c, nil
	}

	bin, _ = binary(e.BinDir, "kube-scheduler")
	sched, err := proc.Start(name+"/kube-scheduler", bin, []string{
		"--kubeconfig", c.Kubeconfig, "--leader-elect=false", "--secure-port=0",
	}, filepath.Join(dir, "kube-scheduler.log"), e.detached)
	if err != nil {
		return c, err
	}
	c.Processes = append(c.Processes, sched)

	args := []string{"--kubeconfig", c.Kubeconfig, "--manage-all-nodes",
		"--server-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--node-lease-duration-seconds", "40"}
	for _, s := range kwokStages {
		args = append(args, "--config", filepath.Join(e.BinDir, "kwok-stages", s))
	}
	bin, _ = binary(e.BinDir, "kwok")
	kw, err := proc.Start(name+"/kwok", bin, args, filepath.Join(dir, "kwok.log"), e.detached)
	if err != nil {
		return c, err
	}
	c.Processes = append(c.Processes, kw)
	if err := c.addNodes(ctx, nodes); err != nil {
		return c, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// addNodes creates kwok nodes and waits until all are Ready and untainted.
func (c *Cluster) addNodes(ctx context.Context, n int) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("%s-node-%d", c.Name, i+1),
				Labels:      map[string]string{"type": "kwok", "kubernetes.io/os": "linux"},
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: NodeCPU, corev1.ResourceMemory: NodeMemory, corev1.ResourcePods: NodePods},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: NodeCPU, corev1.ResourceMemory: NodeMemory, corev1.ResourcePods: NodePods},
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node: %w", err)
		}
	}
	return waitFor(ctx, 60*time.Second, c.Processes[len(c.Processes)-1], func(ctx context.Context) error {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range list.Items {
			if NodeReady(&n) && len(n.Spec.Taints) == 0 {
				ready++
			}
		}
		if ready < n {
			return fmt.Errorf("%d of %d nodes ready and untainted", ready, n)
		}
		return nil
	})
}

// NodeReady reports whether a node has condition Ready=True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitFor polls check until it succeeds, the timeout passes or the process exits; the error
// then carries the last check error and the tail of the process log.
func waitFor(ctx context.Context, timeout time.Duration, p *proc.Process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited: %v\n%s", p.Name, last, proc.Tail(p.LogFile, 20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %v (log %s)", timeout, last, p.LogFile)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func httpGet(ctx context.Context, url string, p *pki) error {
	client := http.DefaultClient
	if p != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(p.caCert)
		cert, err := tls.X509KeyPair(p.adminCert, p.adminKey)
		if err != nil {
			return err
		}
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
		defer client.CloseIdleConnections()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
