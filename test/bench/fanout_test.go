// Package bench measures the hub's delivery fan-out against a real hub API server, with
// simulated member agents: their member side is in memory, and every figure says so.
package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub"
	"flotilla.dev/flotilla/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("FLOTILLA_BENCH_LOG") != "" { // the hub's log, to debug a benchmark
		ctrllog.SetLogger(zap.New())
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(ctx, testenv.Options{Members: 0})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start hub API server:", err)
		os.Exit(1)
	}
	cfg := env.Hub.Config
	done := make(chan error, 1)
	// The hub runs with its shipped defaults (client rate limits included).
	go func() {
		done <- hub.Run(ctx, hub.Options{Config: cfg, InstallCRDs: true, MetricsAddr: "0", ProbeAddr: "0"})
	}()
	if err := waitForHub(ctx, cfg, done); err != nil {
		fmt.Fprintln(os.Stderr, "start hub:", err)
		cancel()
		env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	<-done
	env.Stop()
	os.Exit(code)
}

// waitForHub returns once the hub has installed its CRDs and serves Bundles.
func waitForHub(ctx context.Context, cfg *rest.Config, done <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := client.New(cfg, client.Options{Scheme: hub.Scheme()})
		if err == nil {
			if err = c.List(ctx, &flv1.BundleList{}); err == nil {
				return nil
			}
		}
		select {
		case err := <-done:
			return fmt.Errorf("hub stopped: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hub API not served after 2 min: %v", err)
		}
	}
}

// fleet is N simulated members: MemberClusters on the real hub, and one in-memory agent
// loop per fleet that writes each Work's status as a real agent would after applying.
type fleet struct {
	c  client.Client
	n  int
	mu sync.Mutex
	// seen records, per revision, when each cluster's Work first reported it applied:
	// recorded for every revision, because the awaited one is known only after the hub
	// rendered it.
	seen map[string]map[string]time.Time
}

func (f *fleet) record(rev, cluster string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.seen[rev]
	if m == nil {
		m = map[string]time.Time{}
		f.seen[rev] = m
	}
	if _, ok := m[cluster]; !ok {
		m[cluster] = at
	}
}

func newFleet(ctx context.Context, tb testing.TB, prefix string, n int) *fleet {
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: hub.Scheme()})
	if err != nil {
		tb.Fatal(err)
	}
	f := &fleet{c: c, n: n, seen: map[string]map[string]time.Time{}}
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			mc := &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", prefix, i),
				Labels: map[string]string{"bench": prefix, "region": []string{"eu", "us", "ap"}[i%3]}},
				Spec: flv1.MemberClusterSpec{Accepted: true}}
			if err := c.Create(ctx, mc); err != nil {
				tb.Error(err)
			}
		}()
	}
	wg.Wait()
	// Wait for the hub to provision every cluster namespace.
	deadline := time.Now().Add(10 * time.Minute)
	for {
		nss := &corev1.NamespaceList{}
		if err := c.List(ctx, nss, client.HasLabels{flv1.LabelCluster}); err != nil {
			tb.Fatal(err)
		}
		ready := 0
		for _, ns := range nss.Items {
			if strings.HasPrefix(ns.Labels[flv1.LabelCluster], prefix+"-") && ns.Status.Phase == corev1.NamespaceActive {
				ready++
			}
		}
		if ready >= n {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d cluster namespaces after 10 min", ready, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.startAgents(ctx, tb, cfg, prefix)
	return f
}

// startAgents runs the simulated agents: one informer over the fleet's Works (a real agent
// watches only its own namespace), and a pool that writes Applied/Available status.
func (f *fleet) startAgents(ctx context.Context, tb testing.TB, cfg *rest.Config, prefix string) {
	// Each fleet's simulated agents see only that fleet's Works.
	sel := labels.SelectorFromSet(labels.Set{flv1.LabelBundleName: prefix})
	cc, err := ctrlcache.New(cfg, ctrlcache.Options{Scheme: hub.Scheme(), ByObject: map[client.Object]ctrlcache.ByObject{&flv1.Work{}: {Label: sel}}})
	if err != nil {
		tb.Fatal(err)
	}
	inf, err := cc.GetInformer(ctx, &flv1.Work{})
	if err != nil {
		tb.Fatal(err)
	}
	work := make(chan *flv1.Work, 100000)
	handle := func(o any) {
		w, ok := o.(*flv1.Work)
		if !ok {
			return
		}
		if w.Status.AppliedRevision == w.Spec.Revision && w.Status.ObservedGeneration == w.Generation {
			f.record(w.Spec.Revision, w.Labels[flv1.LabelCluster], time.Now())
			return
		}
		work <- w
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, n any) { handle(n) }})
	go func() { _ = cc.Start(ctx) }()
	cc.WaitForCacheSync(ctx)
	for range 32 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case w := <-work:
					_ = f.c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(simulatedStatus(w)),
						client.FieldOwner("flotilla-agent-simulated"), client.ForceOwnership)
				}
			}
		}()
	}
}

func simulatedStatus(w *flv1.Work) *unstructured.Unstructured {
	now := metav1.Now()
	conds := []any{}
	for _, t := range []string{flv1.ConditionApplied, flv1.ConditionAvailable} {
		conds = append(conds, map[string]any{"type": t, "status": "True", "reason": "Simulated",
			"message": "simulated agent", "observedGeneration": w.Generation, "lastTransitionTime": now.UTC().Format(time.RFC3339)})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": flv1.GroupVersion.String(), "kind": "Work",
		"metadata": map[string]any{"name": w.Name, "namespace": w.Namespace},
		"status": map[string]any{"observedGeneration": w.Generation, "appliedRevision": w.Spec.Revision,
			"appliedHash": w.Spec.Content.Hash, "conditions": conds},
	}}
}

func bundleFor(prefix string, value string) *flv1.Bundle {
	return bundleWith(prefix, value, nil)
}

// bundleWith is the benchmark's Bundle with a rollout strategy (nil: all at once).
func bundleWith(prefix string, value string, strategy *flv1.RolloutStrategy) *flv1.Bundle {
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"v":%q}}`, value)
	return &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: prefix, Namespace: "default"},
		Spec: flv1.BundleSpec{TargetNamespace: "app",
			Source:    flv1.BundleSource{Inline: &flv1.InlineSource{Resources: []runtime.RawExtension{{Raw: []byte(cm)}}}},
			Placement: flv1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": prefix}}},
			Rollout:   strategy}}
}

// change updates the Bundle and waits until every cluster reported the new revision,
// returning the per-cluster latencies (sorted) and the total.
func (f *fleet) change(ctx context.Context, tb testing.TB, prefix, value string) ([]time.Duration, time.Duration) {
	b := &flv1.Bundle{}
	key := client.ObjectKey{Namespace: "default", Name: prefix}
	if err := f.c.Get(ctx, key, b); err != nil {
		tb.Fatal(err)
	}
	want := bundleFor(prefix, value)
	before := b.DeepCopy()
	b.Spec.Source = want.Spec.Source
	start := time.Now()
	if err := f.c.Patch(ctx, b, client.MergeFrom(before)); err != nil {
		tb.Fatal(err)
	}
	// The revision is content-addressed; learn its name from the Bundle's status once the
	// hub rendered it. Works that report it meanwhile are already being recorded.
	for {
		if err := f.c.Get(ctx, key, b); err != nil {
			tb.Fatal(err)
		}
		if b.Status.ObservedGeneration == b.Generation && b.Status.Revision != "" &&
			meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled) != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	rev := b.Status.Revision
	deadline := time.Now().Add(10 * time.Minute)
	for {
		f.mu.Lock()
		done := len(f.seen[rev])
		f.mu.Unlock()
		if done >= f.n {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d clusters applied revision %s within 10 min", done, f.n, rev)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var lat []time.Duration
	for _, t := range f.seen[rev] {
		lat = append(lat, t.Sub(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, lat[len(lat)-1]
}

func pct(lat []time.Duration, p float64) time.Duration {
	i := int(float64(len(lat))*p+0.5) - 1
	return lat[max(0, min(i, len(lat)-1))]
}

// fleets are built once per size: the benchmark framework calls a benchmark several times
// (b.N = 1, then more), and the fleet and its Bundle outlive each call.
var fleets = map[int]*fleet{}

func fleetOf(b *testing.B, n int) (*fleet, string) {
	prefix := fmt.Sprintf("fan%d", n)
	if f := fleets[n]; f != nil {
		return f, prefix
	}
	ctx := context.Background() // lives as long as the test binary
	f := newFleet(ctx, b, prefix, n)
	if err := f.c.Create(ctx, bundleFor(prefix, "0")); err != nil {
		b.Fatal(err)
	}
	f.change(ctx, b, prefix, "warm") // first Works created
	fleets[n] = f
	return f, prefix
}

func runFanout(b *testing.B, n int) {
	f, prefix := fleetOf(b, n)
	ctx := context.Background()
	var p50, p99, total time.Duration
	reqBefore := requestCounts(ctx, b)
	b.ResetTimer()
	for i := range b.N {
		lat, tot := f.change(ctx, b, prefix, fmt.Sprintf("%d-%d", b.N, i))
		p50, p99, total = p50+pct(lat, 0.5), p99+pct(lat, 0.99), total+tot
	}
	b.StopTimer()
	logRequestDelta(b, reqBefore, requestCounts(ctx, b))
	d := time.Duration(b.N)
	b.ReportMetric(float64((p50 / d).Milliseconds()), "p50-ms")
	b.ReportMetric(float64((p99 / d).Milliseconds()), "p99-ms")
	b.ReportMetric(float64((total / d).Milliseconds()), "total-ms")
	b.Logf("fan-out to %d simulated clusters (real hub API server, in-memory agents): p50 %s, p99 %s, total %s",
		n, p50/d, p99/d, total/d)
}

func BenchmarkFanout100Simulated(b *testing.B)  { runFanout(b, 100) }
func BenchmarkFanout1000Simulated(b *testing.B) { runFanout(b, 1000) }

// TestFanoutSmoke keeps the benchmark working in `make test`: 10 simulated clusters.
func TestFanoutSmoke(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFleet(ctx, t, "smoke", 10)
	if err := f.c.Create(ctx, bundleFor("smoke", "0")); err != nil {
		t.Fatal(err)
	}
	f.change(ctx, t, "smoke", "1")
	lat, total := f.change(ctx, t, "smoke", "2")
	if len(lat) != 10 {
		t.Fatalf("%d clusters reported, want 10", len(lat))
	}
	t.Logf("fan-out to 10 simulated clusters: p50 %s, total %s", pct(lat, 0.5), total)
}

// requestCounts reads the hub API server's apiserver_request_total, summed by verb and
// resource: the bench prints what one fan-out costs the API server.
func requestCounts(ctx context.Context, tb testing.TB) map[string]float64 {
	cs, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		get := func(k string) string {
			_, rest, ok := strings.Cut(labels, k+`="`)
			if !ok {
				return ""
			}
			v, _, _ := strings.Cut(rest, `"`)
			return v
		}
		var v float64
		fmt.Sscan(value, &v)
		key := get("verb") + " " + get("resource")
		if s := get("subresource"); s != "" {
			key += "/" + s
		}
		out[key] += v
	}
	return out
}

func logRequestDelta(tb testing.TB, before, after map[string]float64) {
	type kv struct {
		k string
		v float64
	}
	var d []kv
	for k, v := range after {
		if dv := v - before[k]; dv >= 1 {
			d = append(d, kv{k, dv})
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i].v > d[j].v })
	var parts []string
	for _, e := range d[:min(len(d), 12)] {
		parts = append(parts, fmt.Sprintf("%s %.0f", e.k, e.v))
	}
	tb.Logf("hub API server requests during the fan-out: %s", strings.Join(parts, ", "))
}
