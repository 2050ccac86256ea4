package bench

import (
	"context"
	"fmt"
	"time"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// usage samples every hub process.
func (e *Env) usage() map[string]usage {
	out := map[string]usage{}
	for _, p := range e.Processes() {
		if u, err := readUsage(p.Pid); err == nil {
			out[p.Role] = u
		}
	}
	return out
}

// idleScenario gives every cluster BundlesPerCluster Bundles, waits until all are applied,
// then, while the agents do only their periodic writes (heartbeats and fact reports), samples
// idleFor and reports what each hub process costs per cluster: CPU over that time, and
// resident memory grown since the empty hub.
func (f *Fleet) idleScenario(ctx context.Context, empty map[string]usage, perCluster int, idleFor time.Duration) (Result, error) {
	have := &flv1.BundleList{} // the fanout and rollout scenarios' Bundles, when they ran
	if err := f.e.Client.List(ctx, have); err != nil {
		return Result{}, err
	}
	var names []string
	created := time.Now()
	for i := len(have.Items); i < perCluster; i++ {
		name := fmt.Sprintf("idle-%d", i)
		if err := f.e.Client.Create(ctx, benchBundle(name, "0", nil)); err != nil {
			return Result{}, err
		}
		names = append(names, name)
	}
	// The first Bundle created is done sooner when Bundles are reconciled one at a time, and
	// all of them are not: the API server's writes are the bound. Both are reported.
	var firstDone, allDone time.Duration
	for i, name := range names {
		if _, err := f.waitApplied(ctx, name); err != nil {
			return Result{}, err
		}
		if i == 0 {
			firstDone = time.Since(created)
		}
		allDone = time.Since(created)
	}
	time.Sleep(10 * time.Second) // the last status writes pass, caches settle
	writesBefore, err := f.e.apiWrites(ctx)
	if err != nil {
		return Result{}, err
	}
	start := f.e.usage()
	time.Sleep(idleFor)
	end := f.e.usage()
	writesAfter, err := f.e.apiWrites(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := f.e.heapProfile(ctx, fmt.Sprintf("idle-%d", f.N)); err != nil {
		return Result{}, err
	}

	r := f.result(ScenarioIdle)
	r.add("Bundles per cluster", float64(perCluster), "")
	if len(names) > 0 {
		r.seconds(fmt.Sprintf("%d Bundles created at once: the first created, applied everywhere", len(names)), firstDone)
		r.seconds(fmt.Sprintf("%d Bundles created at once: all applied everywhere", len(names)), allDone)
	}
	var allKB, allMilli float64
	for _, p := range f.e.Processes() {
		a, b, e0 := start[p.Role], end[p.Role], empty[p.Role]
		kb := (float64(b.RSS) - float64(e0.RSS)) / 1024 / float64(f.N)
		milli := cpuBetween(a, b)
		allKB, allMilli = allKB+kb, allMilli+milli
		if p.Role == roleHub {
			r.addTarget(p.Role+": memory per cluster", kb, "KB", targetHubKBPerClust)
		} else {
			r.add(p.Role+": memory per cluster", kb, "KB")
		}
		r.add(p.Role+": resident memory", float64(b.RSS)/(1<<20), "MB")
		r.add(p.Role+": CPU", milli, "millicores")
	}
	r.addTarget("all: memory per cluster", allKB, "KB", targetAllKBPerClust)
	r.add("all: CPU per 1,000 clusters", allMilli/float64(f.N)*1000, "millicores")
	r.Metrics = append(r.Metrics, writeRates(writesBefore, writesAfter, float64(f.N)*idleFor.Minutes(), "API writes per cluster per minute", "writes/min")...)
	return r, nil
}
