// Package agent is the member-side half of Flotilla. One agent runs per member cluster. It
// needs only outbound access to the hub, where it acts as its cluster's ServiceAccount: it
// renews a heartbeat Lease in its hub namespace, reports the cluster's facts (version, nodes,
// capacity, requests) into a MemberClusterReport there, rotates its own hub token, and
// delivers its Works (package deliver).
package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent/deliver"
)

// FieldOwner is the server-side-apply field manager of the agent on the hub.
const FieldOwner = "flotilla-agent"

// The agent's default intervals. Every agent writes its Lease every heartbeat, so the
// heartbeat sets the hub's load at rest: 30 s (the hub judges a cluster unreachable after 5
// missed beats, 2.5 min) keeps 1,000 agents at 33 writes/s and 10,000 within what one small
// API server writes (docs/performance.md). Facts are compared every report interval and
// written only when they changed, or when the last write is MaxReportAge old.
const (
	DefaultHeartbeatInterval = 30 * time.Second
	DefaultReportInterval    = time.Minute
	MaxReportAge             = 10 * time.Minute
)

// The agent's client rate limits towards its member API server.
const (
	DefaultMemberQPS   = 50
	DefaultMemberBurst = 100
)

// Options configure an agent.
type Options struct {
	// Member is a rest config for the member cluster (a kubeconfig or in-cluster).
	Member *rest.Config
	// HeartbeatInterval is how often the Lease is renewed (default 30s). The hub treats the
	// cluster as unreachable after 5 missed intervals unless it is configured otherwise.
	HeartbeatInterval time.Duration
	// ReportInterval is how often facts are re-read and, when they changed, written (default
	// 1m); unchanged facts are written again after MaxReportAge. Node changes are reported
	// within a second.
	ReportInterval time.Duration
	// RotateFraction of a token's lifetime passes before it is replaced (default 0.8).
	RotateFraction float64
	// Identity names this agent instance in the Lease (default hostname-pid).
	Identity string
	// Version is reported as status.agentVersion.
	Version string
	Log     *slog.Logger
}

// Agent is a running agent.
type Agent struct {
	opts   Options
	member kubernetes.Interface
	creds  *Credentials
	token  tokenHolder
	hub    *rest.Config
	hubCS  kubernetes.Interface
	log    *slog.Logger
	report chan struct{}
	mu     sync.Mutex
	claims tokenClaims
	// renewer keeps the heartbeat Lease as last written (only the heartbeat loop uses it).
	renewer *LeaseRenewer
}

// New reads the hub credentials from the member cluster and builds the hub clients.
func New(ctx context.Context, opts Options) (*Agent, error) {
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.ReportInterval <= 0 {
		opts.ReportInterval = DefaultReportInterval
	}
	if opts.RotateFraction <= 0 || opts.RotateFraction >= 1 {
		opts.RotateFraction = DefaultRotateFraction
	}
	if opts.Identity == "" {
		h, _ := os.Hostname()
		opts.Identity = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Member.QPS == 0 {
		// client-go's default (5/s) made a delivery of 100 objects take 40 s; the agent is
		// its member's one Flotilla client and applies, reads health and prunes in bursts.
		opts.Member = rest.CopyConfig(opts.Member)
		opts.Member.QPS, opts.Member.Burst = DefaultMemberQPS, DefaultMemberBurst
	}
	member, err := kubernetes.NewForConfig(opts.Member)
	if err != nil {
		return nil, fmt.Errorf("member client: %w", err)
	}
	a := &Agent{opts: opts, member: member, log: opts.Log, report: make(chan struct{}, 1)}
	if err := a.loadCredentials(ctx); err != nil {
		return nil, err
	}
	a.hub = &rest.Config{
		Host:            a.creds.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: a.creds.CA},
		UserAgent:       "flotilla-agent/" + opts.Version,
		QPS:             20, Burst: 40,
		Timeout:       15 * time.Second,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return &bearerTransport{next: rt, h: &a.token} },
	}
	if a.hubCS, err = kubernetes.NewForConfig(a.hub); err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	a.log = a.log.With("cluster", a.creds.Cluster)
	return a, nil
}

// loadCredentials (re)reads the credentials Secret, e.g. after the hub rejected the token.
func (a *Agent) loadCredentials(ctx context.Context) error {
	c, err := LoadCredentials(ctx, a.member)
	if err != nil {
		return err
	}
	claims, err := parseToken(c.Token)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.creds, a.claims = c, claims
	a.mu.Unlock()
	a.token.set(c.Token)
	return nil
}

// Cluster is the name of the member cluster this agent serves.
func (a *Agent) Cluster() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.creds.Cluster
}

// Run heartbeats, reports and rotates until ctx ends. Hub outages never stop it: every loop
// retries with capped exponential backoff and says so in the log.
func (a *Agent) Run(ctx context.Context) error {
	a.log.Info("agent starting", "hub", a.creds.Server, "heartbeatInterval", a.opts.HeartbeatInterval,
		"tokenExpires", time.Unix(a.claims.Expiry, 0).UTC())
	facts, err := a.startFactWatch(ctx)
	if err != nil {
		return err
	}
	del, err := deliver.New(deliver.Options{Hub: a.hub, Member: a.opts.Member, Cluster: a.Cluster(), Namespace: SystemNamespace, Log: a.log})
	if err != nil {
		return fmt.Errorf("delivery loop: %w", err)
	}
	deliverLoop := func(ctx context.Context) {
		if err := del.Run(ctx); err != nil {
			a.log.Error("delivery loop stopped", "error", err)
		}
	}
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){a.heartbeatLoop, func(ctx context.Context) { a.reportLoop(ctx, facts) }, a.rotateLoop, deliverLoop} {
		wg.Add(1)
		go func() { defer wg.Done(); loop(ctx) }()
	}
	wg.Wait()
	return nil
}

// backoff is a capped exponential backoff with jitter, reset after a success.
type backoff struct{ cur, min, max time.Duration }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}
func (b *backoff) reset() { b.cur = 0 }

// hubError logs a failed hub call clearly and, when the hub rejected the token, re-reads
// the credentials Secret in case the cluster was re-joined.
func (a *Agent) hubError(ctx context.Context, what string, err error, retry time.Duration) {
	switch {
	case apierrors.IsUnauthorized(err):
		a.log.Error("hub rejected the agent's credentials (401): the cluster may have been unjoined or its token expired; re-join with `flotilla join`",
			"during", what, "retryIn", retry.Round(time.Millisecond))
		if lerr := a.loadCredentials(ctx); lerr != nil {
			a.log.Error("re-reading credentials failed", "error", lerr)
		}
	case apierrors.IsForbidden(err):
		a.log.Error("hub forbids the request (403): the cluster's RBAC on the hub is missing or changed", "during", what, "error", err, "retryIn", retry.Round(time.Millisecond))
	default:
		a.log.Warn("hub unreachable or failing, retrying", "during", what, "error", err, "retryIn", retry.Round(time.Millisecond))
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func namespace(cluster string) string { return flv1.ClusterNamespace(cluster) }
