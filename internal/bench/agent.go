package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/join"
)

// deliveryObjects is how many objects the agent scenario's delivery applies.
const deliveryObjects = 100

// RunAgent measures one real agent (flotilla-agent, else the flotilla binary) against a real member cluster:
// its resident memory and CPU over idleFor at rest, then while it applies a Bundle of
// deliveryObjects ConfigMaps.
func RunAgent(ctx context.Context, o Options, idleFor time.Duration) (Result, error) {
	o.Members = 1
	e, err := Start(ctx, o)
	if err != nil {
		return Result{}, err
	}
	defer e.Stop()
	const name = "member-1"
	stateDir := filepath.Join(e.T.Dir, "agents")
	e.logf("agent: joining %s with a real agent", name)
	if err := join.Join(ctx, join.Options{Name: name, Labels: map[string]string{"bench": "real"}, Hub: e.T.Hub.Config,
		MemberKubeconfig: e.T.Members[0].Kubeconfig, Local: true, Binary: o.Binary, StateDir: stateDir, Wait: 2 * time.Minute}); err != nil {
		return Result{}, fmt.Errorf("join a real agent: %w", err)
	}
	defer func() { _, _ = join.StopLocalAgent(stateDir, name, true) }()
	la, err := join.LoadLocalAgent(stateDir, name)
	if err != nil {
		return Result{}, err
	}
	r := Result{Scenario: ScenarioAgent, Clusters: 1, Agents: "real"}
	// join runs flotilla-agent when it lies next to the flotilla binary (make build puts it there).
	if fi, err := os.Stat(la.Binary); err == nil {
		r.add(fmt.Sprintf("executable %s: size", filepath.Base(la.Binary)), float64(fi.Size())/(1<<20), "MB")
	}

	time.Sleep(10 * time.Second) // past start-up: first report, caches filled
	e.logf("agent: %s idle", idleFor)
	a, err := readUsage(la.Pid)
	if err != nil {
		return r, err
	}
	stopPeak := make(chan struct{})
	peak := samplePeak(la.Pid, 500*time.Millisecond, stopPeak)
	time.Sleep(idleFor)
	b, err := readUsage(la.Pid)
	close(stopPeak)
	if err != nil {
		return r, err
	}
	r.addTarget("idle: resident memory", float64(b.RSS)/(1<<20), "MB", targetAgentIdleMB)
	r.add("idle: private (anonymous) memory", float64(b.Anon)/(1<<20), "MB")
	r.add("idle: file-backed memory (the executable's pages)", float64(b.RSS-b.Anon)/(1<<20), "MB")
	r.add("idle: peak resident memory", float64(<-peak)/(1<<20), "MB")
	r.addTarget("idle: CPU", cpuBetween(a, b), "millicores", targetAgentIdleMilli)

	e.logf("agent: delivering %d objects", deliveryObjects)
	stopPeak = make(chan struct{})
	peak = samplePeak(la.Pid, 100*time.Millisecond, stopPeak)
	a, _ = readUsage(la.Pid)
	took, err := deliver(ctx, e.Client, name)
	b, _ = readUsage(la.Pid)
	close(stopPeak)
	if err != nil {
		return r, err
	}
	r.seconds(fmt.Sprintf("delivery of %d objects: time to Available", deliveryObjects), took)
	r.add("delivery: peak resident memory", float64(<-peak)/(1<<20), "MB")
	r.add("delivery: CPU time", (b.CPU - a.CPU).Seconds(), "s")
	return r, nil
}

// deliver creates a Bundle of deliveryObjects ConfigMaps for the member and waits until its
// Work reports them applied and available.
func deliver(ctx context.Context, c client.Client, cluster string) (time.Duration, error) {
	var res []runtime.RawExtension
	for i := range deliveryObjects {
		data := map[string]string{}
		for k := range 10 {
			data[fmt.Sprintf("key-%d", k)] = fmt.Sprintf("value %d of object %d", k, i)
		}
		raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("bench-%03d", i)}, "data": data})
		res = append(res, runtime.RawExtension{Raw: raw})
	}
	b := &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "agent-delivery", Namespace: "default"},
		Spec: flv1.BundleSpec{TargetNamespace: "bench",
			Source:    flv1.BundleSource{Inline: &flv1.InlineSource{Resources: res}},
			Placement: flv1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "real"}}}}}
	start := time.Now()
	if err := c.Create(ctx, b); err != nil {
		return 0, err
	}
	deadline := start.Add(5 * time.Minute)
	for {
		works := &flv1.WorkList{}
		if err := c.List(ctx, works, client.InNamespace(flv1.ClusterNamespace(cluster)), client.MatchingLabels{flv1.LabelBundleName: b.Name}); err != nil {
			return 0, err
		}
		for _, w := range works.Items {
			if w.Status.AppliedRevision == w.Spec.Revision && w.Status.ObservedGeneration == w.Generation &&
				meta.IsStatusConditionTrue(w.Status.Conditions, flv1.ConditionAvailable) {
				return time.Since(start), nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the agent did not report the delivery available within 5 min")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
