package bench

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// simAgent holds the hub clients one simulated agent writes with.
type simAgent struct {
	leases coordinationv1client.LeaseInterface
	dyn    dynamic.Interface
}

// agentTokenLifetime outlasts the longest benchmark (10,000 clusters, all scenarios).
const agentTokenLifetime = 6 * time.Hour

// newSimAgent returns the clients of cluster's simulated agent. By default it acts as the
// agent's own ServiceAccount with a token the hub's API server issued, so that
// authentication, RBAC and priority and fairness treat its requests as a real agent's;
// with AgentsAsAdmin it uses the admin credentials (none of those costs). It waits for the
// hub to create the ServiceAccount.
func (f *Fleet) newSimAgent(ctx context.Context, cluster string) (*simAgent, error) {
	cfg := f.e.Config
	if !f.e.opts.AgentsAsAdmin {
		token, err := f.agentToken(ctx, cluster)
		if err != nil {
			return nil, err
		}
		cfg = rest.AnonymousClientConfig(f.e.Config)
		cfg.BearerToken = token
		cfg.QPS, cfg.Burst = 20, 40 // the real agent's hub client
	}
	leases, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &simAgent{leases: leases.Leases(flv1.ClusterNamespace(cluster)), dyn: dyn}, nil
}

// agentToken requests a token for cluster's agent ServiceAccount, as join does for a real
// agent, retrying while the hub has not created the ServiceAccount yet.
func (f *Fleet) agentToken(ctx context.Context, cluster string) (string, error) {
	secs := int64(agentTokenLifetime / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}
	var last error
	start, warned := time.Now(), false
	for {
		tr, err := f.e.Clientset.CoreV1().ServiceAccounts(flv1.ClusterNamespace(cluster)).
			CreateToken(ctx, flv1.AgentServiceAccount, req, metav1.CreateOptions{})
		if err == nil {
			return tr.Status.Token, nil
		}
		last = err
		if !warned && time.Since(start) > 30*time.Second {
			f.e.logf("simulated agent of %s: no token after 30 s, still trying: %v", cluster, err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("token for the agent of %s: %w (last error: %v)", cluster, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
