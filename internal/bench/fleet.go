package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent"
	agentdeliver "flotilla.dev/flotilla/internal/agent/deliver"
	"flotilla.dev/flotilla/internal/hub"
)

// Fleet is N simulated member agents on the real hub. Each does on the hub what a real agent
// does: it renews its heartbeat Lease, reports facts, and writes each Work's status after
// "applying" it; its member side is in memory, so it applies nothing. One watch serves all
// of them (a real fleet holds one watch per agent; the API server's per-watch cost is not in
// these figures).
type Fleet struct {
	e *Env
	N int

	mu sync.Mutex
	// joined: when each cluster's MemberCluster first turned Ready.
	joined map[string]time.Time
	// applied: per revision, when each cluster's Work first reported it applied (recorded
	// for every revision: the awaited one is known only once the hub rendered it).
	applied map[string]map[string]time.Time
	// delivered: per revision, when each cluster's agent first saw its Work carry it: the
	// change reached the cluster; the status report back to the hub follows.
	delivered map[string]map[string]time.Time

	works chan *flv1.Work
	// agents: each cluster namespace's simulated agent, once it has credentials.
	agents map[string]*simAgent
	// heartbeatEvery is the simulated agents' heartbeat interval.
	heartbeatEvery time.Duration
}

// ClusterName is the name of simulated cluster i.
func ClusterName(i int) string { return fmt.Sprintf("sim-%05d", i) }

// regions label the clusters round-robin; the rollout scenario makes a wave of each.
var regions = []string{"eu", "us", "ap"}

func newFleet(ctx context.Context, e *Env, n int, heartbeatEvery time.Duration) (*Fleet, error) {
	f := &Fleet{e: e, N: n, joined: map[string]time.Time{}, applied: map[string]map[string]time.Time{},
		delivered: map[string]map[string]time.Time{}, agents: map[string]*simAgent{}, works: make(chan *flv1.Work, 16*n), heartbeatEvery: heartbeatEvery}
	hasCluster, _ := labels.NewRequirement(flv1.LabelCluster, selection.Exists, nil)
	cc, err := ctrlcache.New(e.Config, ctrlcache.Options{Scheme: hub.Scheme(), ByObject: map[client.Object]ctrlcache.ByObject{
		&corev1.Namespace{}: {Label: labels.NewSelector().Add(*hasCluster)},
	}})
	if err != nil {
		return nil, err
	}
	nsInf, err := cc.GetInformer(ctx, &corev1.Namespace{})
	if err != nil {
		return nil, err
	}
	// A cluster's namespace appears once the hub provisioned it: its agent starts then, and
	// heartbeats and reports facts for as long as the benchmark runs.
	_, _ = nsInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if ns, ok := o.(*corev1.Namespace); ok && ns.Labels[flv1.LabelCluster] != "" {
			go f.agentLoop(ctx, ns.Labels[flv1.LabelCluster])
		}
	}})
	mcInf, err := cc.GetInformer(ctx, &flv1.MemberCluster{})
	if err != nil {
		return nil, err
	}
	onMC := func(o any) {
		mc, ok := o.(*flv1.MemberCluster)
		if ok && meta.IsStatusConditionTrue(mc.Status.Conditions, flv1.ConditionReady) {
			f.record(f.joined, mc.Name)
		}
	}
	_, _ = mcInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onMC, UpdateFunc: func(_, n any) { onMC(n) }})
	workInf, err := cc.GetInformer(ctx, &flv1.Work{})
	if err != nil {
		return nil, err
	}
	onWork := func(o any) {
		w, ok := o.(*flv1.Work)
		if !ok || w.Labels[flv1.LabelBundleName] == "" { // the baseline's objects are no one's
			return
		}
		reported := w.Status.AppliedRevision == w.Spec.Revision && w.Status.ObservedGeneration == w.Generation
		f.recordRevision(f.delivered, w.Spec.Revision, w.Namespace)
		if reported {
			f.recordRevision(f.applied, w.Spec.Revision, w.Namespace)
			return
		}
		f.works <- w
	}
	_, _ = workInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onWork, UpdateFunc: func(_, n any) { onWork(n) }})
	go func() { _ = cc.Start(ctx) }()
	if !cc.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("simulated agents: caches did not sync")
	}
	// The agents' writers: as many as the hub's Work writers.
	for range 32 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case w := <-f.works:
					f.writeWorkStatus(ctx, w)
				}
			}
		}()
	}
	return f, nil
}

func (f *Fleet) record(m map[string]time.Time, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := m[key]; !ok {
		m[key] = time.Now()
	}
}

// recordRevision notes when cluster namespace ns first got to revision rev in m.
func (f *Fleet) recordRevision(m map[string]map[string]time.Time, rev, ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	byNS := m[rev]
	if byNS == nil {
		byNS = map[string]time.Time{}
		m[rev] = byNS
	}
	if _, ok := byNS[ns]; !ok {
		byNS[ns] = time.Now()
	}
}

// join creates the N MemberClusters at once, as N agents joining together would, and returns
// each cluster's time from the start until it was Ready.
func (f *Fleet) join(ctx context.Context) ([]time.Duration, error) {
	start := time.Now()
	errs := make([]error, f.N)
	workqueue.ParallelizeUntil(ctx, 32, f.N, func(i int) {
		mc := &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: ClusterName(i),
			Labels: map[string]string{"bench": "sim", "region": regions[i%len(regions)]}},
			Spec: flv1.MemberClusterSpec{Accepted: true}}
		errs[i] = f.e.Client.Create(ctx, mc)
	})
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("create MemberCluster: %w", err)
		}
	}
	if err := f.waitFor(ctx, 30*time.Minute, "clusters Ready", func() int { return len(f.joined) }); err != nil {
		return nil, err
	}
	return f.since(f.joined, start), nil
}

// waitFor polls count (under f.mu) until it reaches N.
func (f *Fleet) waitFor(ctx context.Context, timeout time.Duration, what string, count func() int) error {
	deadline := time.Now().Add(timeout)
	for {
		f.mu.Lock()
		got := count()
		f.mu.Unlock()
		if got >= f.N {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d %s after %s", got, f.N, what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// since returns the sorted durations from start to each recorded time.
func (f *Fleet) since(m map[string]time.Time, start time.Time) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Duration, 0, len(m))
	for _, t := range m {
		out = append(out, t.Sub(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// writeWorkStatus writes the status of w as its agent does (deliver.StatusPatch). A Work
// that arrives before its agent has credentials waits for them.
func (f *Fleet) writeWorkStatus(ctx context.Context, w *flv1.Work) {
	f.mu.Lock()
	a := f.agents[w.Namespace]
	f.mu.Unlock()
	if a == nil {
		time.AfterFunc(100*time.Millisecond, func() {
			select {
			case f.works <- w:
			case <-ctx.Done():
			}
		})
		return
	}
	patch, err := agentdeliver.StatusPatch(simulatedWorkStatus(w))
	if err != nil {
		return
	}
	data, err := patch.Data(nil)
	if err != nil {
		return
	}
	_, _ = a.dyn.Resource(worksGVR).Namespace(w.Namespace).Patch(ctx, w.Name, patch.Type(), data,
		metav1.PatchOptions{FieldManager: agent.FieldOwner}, "status")
}

var worksGVR = flv1.GroupVersion.WithResource("works")

// simulatedFacts are what a simulated agent reports; they never change.
func simulatedFacts() flv1.ClusterFacts {
	return flv1.ClusterFacts{KubernetesVersion: "v1.37.2-simulated", Nodes: &flv1.NodeSummary{Total: 3, Ready: 3},
		AgentVersion: "simulated", LastReportTime: &metav1.Time{Time: time.Now()}}
}

// agentLoop is one simulated agent's periodic writes, as the real agent makes them: its
// heartbeat (the agent's own LeaseRenewer) at once and every f.heartbeatEvery (default the
// agent's); its facts at once and, as they never change, every agent.MaxReportAge. A failed
// heartbeat is retried after a second.
func (f *Fleet) agentLoop(ctx context.Context, cluster string) {
	a, err := f.newSimAgent(ctx, cluster)
	if err != nil {
		if ctx.Err() == nil {
			f.e.logf("simulated agent of %s: %v", cluster, err)
		}
		return
	}
	f.mu.Lock()
	f.agents[flv1.ClusterNamespace(cluster)] = a
	f.mu.Unlock()
	hb := &agent.LeaseRenewer{Leases: a.leases, Cluster: cluster, Identity: "simulated", Interval: f.heartbeatEvery}
	nextReport := time.Now()
	for {
		wait := f.heartbeatEvery
		if err := hb.Renew(ctx); err != nil {
			wait = time.Second
		}
		if now := time.Now(); !now.Before(nextReport) {
			if err := agent.WriteReport(ctx, a.dyn, cluster, simulatedFacts()); err == nil {
				nextReport = now.Add(agent.MaxReportAge)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// appliedCount is how many clusters reported rev applied.
func (f *Fleet) appliedCount(rev string) int { return len(f.applied[rev]) }

// simulatedWorkStatus is what a real agent reports once it applied w, a bench Bundle's
// Work (one ConfigMap named after the Bundle, in the Work's target namespace, healthy as
// soon as it exists): the same conditions, reasons and messages, the applied revision, and
// the object's own status, so that the status written, watched and cached has the size of
// a real one.
func simulatedWorkStatus(w *flv1.Work) flv1.WorkStatus {
	now := metav1.Now()
	st := flv1.WorkStatus{ObservedGeneration: w.Generation, AppliedRevision: w.Spec.Revision, AppliedHash: w.Spec.Content.Hash,
		LastAppliedTime: &now,
		Resources: []flv1.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: w.Spec.TargetNamespace, Name: w.Spec.Bundle.Name,
			Health: "Current", Message: "Resource is always ready"}}}
	for _, c := range []struct{ typ, reason, msg string }{
		{flv1.ConditionApplied, flv1.ReasonApplySucceeded, "1 objects applied at " + w.Spec.Revision},
		{flv1.ConditionAvailable, flv1.ReasonAllCurrent, "1 objects current"},
	} {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: c.typ, Status: metav1.ConditionTrue, Reason: c.reason,
			Message: c.msg, ObservedGeneration: w.Generation})
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: flv1.ConditionDrifted, Status: metav1.ConditionFalse,
		Reason: flv1.ReasonNoDrift, Message: "live objects match the delivered state", ObservedGeneration: w.Generation})
	return st
}
