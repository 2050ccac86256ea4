// Package join adds clusters to the fleet and removes them: the logic behind `flotilla join`
// and `flotilla unjoin`, also used by the lab.
package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent"
	"flotilla.dev/flotilla/internal/hub"
)

// Options of a join.
type Options struct {
	Name   string
	Labels map[string]string
	Owner  string
	// Hub is an admin config for the hub.
	Hub *rest.Config
	// HubServer is the hub address the agent uses (default: Hub.Host). Set it when the
	// member reaches the hub under another address than this machine does.
	HubServer string
	// MemberKubeconfig is a kubeconfig file for the member; MemberContext picks a context.
	MemberKubeconfig string
	MemberContext    string
	// TokenTTL is the lifetime of the agent's hub token; the agent rotates it at 80%.
	TokenTTL time.Duration
	// Local starts the agent as a process on this machine instead of a Deployment.
	Local bool
	// Binary is the flotilla binary a local agent runs (default: this executable). When a
	// flotilla-agent executable lies next to it, that one runs instead (see AgentExecutable).
	Binary string
	// StateDir records local agents (default DefaultStateDir()).
	StateDir string
	// Image of the agent Deployment.
	Image string
	// AgentArgs are extra flags for the agent (e.g. --heartbeat-interval=2s).
	AgentArgs []string
	// Wait is how long to wait for the agent to connect; 0 returns once it is installed.
	Wait time.Duration
	// Out receives progress lines.
	Out io.Writer
}

// DefaultTokenTTL is the lifetime of the agent's hub tokens.
const DefaultTokenTTL = 24 * time.Hour

// Join validates every input, then creates and accepts the MemberCluster, waits for the hub
// to provision its identity, issues a time-limited token and installs the agent. When any
// step fails, the steps already done are undone: nothing is left half-created.
func Join(ctx context.Context, o Options) (err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	if o.TokenTTL < agent.MinTokenLifetime {
		return fmt.Errorf("--token-ttl %s is too short: the API server issues tokens for at least %s", o.TokenTTL, agent.MinTokenLifetime)
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir()
	}
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	for k, v := range o.Labels { // callers that did not use ParseLabels
		if _, err := ParseLabels(k + "=" + v); err != nil {
			return err
		}
	}
	memberCfg, err := LoadMemberConfig(o.MemberKubeconfig, o.MemberContext)
	if err != nil {
		return err
	}
	member, err := kubernetes.NewForConfig(memberCfg)
	if err != nil {
		return fmt.Errorf("member kubeconfig %s: %w", o.MemberKubeconfig, err)
	}
	if err := reachable(ctx, member, "member cluster", memberCfg.Host); err != nil {
		return err
	}
	hubCS, err := kubernetes.NewForConfig(o.Hub)
	if err != nil {
		return fmt.Errorf("hub config: %w", err)
	}
	if err := reachable(ctx, hubCS, "hub", o.Hub.Host); err != nil {
		return err
	}
	hubCA, err := caData(o.Hub)
	if err != nil {
		return err
	}
	hc, err := client.New(o.Hub, client.Options{Scheme: hub.Scheme()})
	if err != nil {
		return err
	}

	// Refuse duplicates before creating anything.
	existing := &flv1.MemberCluster{}
	switch err := hc.Get(ctx, types.NamespacedName{Name: o.Name}, existing); {
	case err == nil:
		return fmt.Errorf("a cluster named %q is already in the fleet: choose another name, or run `flotilla unjoin %s` first", o.Name, o.Name)
	case apierrors.IsNotFound(err):
	case meta.IsNoMatchError(err):
		return fmt.Errorf("the hub has no MemberCluster API: start `flotilla hub` against it first (it installs the CRDs)")
	default:
		return fmt.Errorf("check the hub for cluster %q: %w", o.Name, err)
	}
	if creds, err := agent.LoadCredentials(ctx, member); err == nil {
		return fmt.Errorf("this member is already joined to a hub as cluster %q (secret %s/%s exists): run `flotilla unjoin %s` first",
			creds.Cluster, agent.SystemNamespace, agent.CredentialsSecret, creds.Cluster)
	}

	var undo []func(context.Context) error
	defer func() {
		if err == nil {
			return
		}
		// Undo with a fresh context: the caller's may be what ended the join.
		uctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := len(undo) - 1; i >= 0; i-- {
			if uerr := undo[i](uctx); uerr != nil {
				err = errors.Join(err, fmt.Errorf("while undoing the join: %w", uerr))
			}
		}
	}()

	step(o.Out, "creating MemberCluster %s", o.Name)
	mc := &flv1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: o.Labels},
		Spec:       flv1.MemberClusterSpec{Owner: o.Owner, Accepted: true},
	}
	if err := hc.Create(ctx, mc); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("a cluster named %q is already in the fleet", o.Name)
		}
		return fmt.Errorf("create MemberCluster: %w", err)
	}
	undo = append(undo, func(ctx context.Context) error { return deleteMemberCluster(ctx, hc, o.Name, nil) })

	ns := flv1.ClusterNamespace(o.Name)
	step(o.Out, "waiting for the hub to provision namespace %s and the agent's identity", ns)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := hubCS.CoreV1().ServiceAccounts(ns).Get(ctx, flv1.AgentServiceAccount, metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("the hub did not provision %s/%s within a minute: is `flotilla hub` running against this hub?", ns, flv1.AgentServiceAccount)
	}

	step(o.Out, "issuing a hub token valid for %s", o.TokenTTL)
	secs := int64(o.TokenTTL.Seconds())
	tr, err := hubCS.CoreV1().ServiceAccounts(ns).CreateToken(ctx, flv1.AgentServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("issue the agent's hub token: %w", err)
	}
	server := o.HubServer
	if server == "" {
		server = o.Hub.Host
	}
	creds := &agent.Credentials{Server: server, CA: hubCA, Token: tr.Status.Token, Cluster: o.Name}

	step(o.Out, "installing the agent on the member (namespace %s)", agent.SystemNamespace)
	undo = append(undo, func(ctx context.Context) error { return removeFromMember(ctx, member) })
	if err := installOnMember(ctx, member, creds, o.Image, !o.Local, o.AgentArgs); err != nil {
		return err
	}
	if o.Local {
		bin := o.Binary
		if bin == "" {
			if bin, err = os.Executable(); err != nil {
				return err
			}
		}
		la, err := StartLocalAgent(o.StateDir, AgentExecutable(bin), o.Name, o.MemberKubeconfig, o.AgentArgs)
		if err != nil {
			return fmt.Errorf("start the local agent: %w", err)
		}
		undo = append(undo, func(context.Context) error { _, err := StopLocalAgent(o.StateDir, o.Name, true); return err })
		step(o.Out, "started local agent %s (pid %d, log %s)", filepath.Base(la.Binary), la.Pid, la.LogFile)
	}
	if o.Wait <= 0 {
		return nil
	}
	step(o.Out, "waiting up to %s for the agent to connect", o.Wait)
	if err := WaitReady(ctx, hc, o.Name, o.Wait); err != nil {
		hint := "check the agent's logs: kubectl -n " + agent.SystemNamespace + " logs deploy/" + agentName
		if o.Local {
			hint = "check the agent's log: " + agentDir(o.StateDir, o.Name) + "/agent.log"
		}
		return fmt.Errorf("%w; %s", err, hint)
	}
	step(o.Out, "cluster %s joined and Ready", o.Name)
	return nil
}

// WaitReady waits until the MemberCluster is Joined and Ready.
func WaitReady(ctx context.Context, hc client.Client, name string, timeout time.Duration) error {
	var last *flv1.MemberCluster
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		mc := &flv1.MemberCluster{}
		if err := hc.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
			return false, nil
		}
		last = mc
		return meta.IsStatusConditionTrue(mc.Status.Conditions, flv1.ConditionJoined) &&
			meta.IsStatusConditionTrue(mc.Status.Conditions, flv1.ConditionReady) && mc.Status.Nodes != nil, nil
	})
	if err != nil {
		msg := "no status yet"
		if last != nil {
			if c := meta.FindStatusCondition(last.Status.Conditions, flv1.ConditionReady); c != nil {
				msg = c.Reason + ": " + c.Message
			}
		}
		return fmt.Errorf("cluster %s did not become Ready within %s (%s)", name, timeout, msg)
	}
	return nil
}

// LoadMemberConfig reads a member kubeconfig with a clear error.
func LoadMemberConfig(file, context string) (*rest.Config, error) {
	if file == "" {
		return nil, fmt.Errorf("--member-kubeconfig is required: a kubeconfig file with admin access to the cluster to join")
	}
	if _, err := os.Stat(file); err != nil {
		return nil, fmt.Errorf("cannot read member kubeconfig: %w", err)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: file},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("member kubeconfig %s is not usable: %w", file, err)
	}
	cfg.Timeout = 15 * time.Second
	return cfg, nil
}

func reachable(ctx context.Context, cs kubernetes.Interface, what, host string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx)
	if err := res.Error(); err != nil {
		return fmt.Errorf("%s at %s is unreachable or rejects these credentials: %w", what, host, err)
	}
	return nil
}

func caData(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("hub CA file: %w", err)
		}
		return b, nil
	}
	if cfg.Insecure {
		return nil, fmt.Errorf("the hub kubeconfig skips TLS verification; agents need the hub's CA certificate: use a kubeconfig with certificate-authority data")
	}
	return nil, nil // the hub's certificate is signed by a public CA the agent trusts
}

func step(w io.Writer, format string, args ...any) { fmt.Fprintf(w, "  - "+format+"\n", args...) }
