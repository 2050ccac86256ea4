package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
)

// hubTiming is what the hub's controllers spent so far, per controller, from
// controller-runtime's own metrics: reconciles, time in Reconcile and time waiting in the
// work queue (seconds). The difference over a fan-out says where its time went in the hub.
type hubTiming map[string]*controllerTiming

type controllerTiming struct {
	Reconciles, ReconcileSeconds float64
	Queued, QueueSeconds         float64
}

// hubTiming reads the hub's /metrics.
func (e *Env) hubTiming(ctx context.Context) (hubTiming, error) {
	text, err := e.hubMetricsText(ctx)
	if err != nil {
		return nil, err
	}
	return parseHubTiming(text)
}

// hubMetrics is the hub's /metrics, parsed.
func (e *Env) hubMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	text, err := e.hubMetricsText(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(text)
}

// hubMetricsText is the hub's /metrics.
func (e *Env) hubMetricsText(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.metrics+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("hub metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("hub metrics: %w", err)
	}
	return string(body), nil
}

func parseHubTiming(text string) (hubTiming, error) {
	families, err := parseMetrics(text)
	if err != nil {
		return nil, err
	}
	out := hubTiming{}
	get := func(name string) *controllerTiming {
		if out[name] == nil {
			out[name] = &controllerTiming{}
		}
		return out[name]
	}
	histograms := func(family, label string, each func(c *controllerTiming, count, sum float64)) {
		fam, ok := families[family]
		if !ok {
			return
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					h := m.GetHistogram()
					each(get(l.GetValue()), float64(h.GetSampleCount()), h.GetSampleSum())
				}
			}
		}
	}
	histograms("controller_runtime_reconcile_time_seconds", "controller", func(c *controllerTiming, n, s float64) {
		c.Reconciles, c.ReconcileSeconds = n, s
	})
	histograms("workqueue_queue_duration_seconds", "name", func(c *controllerTiming, n, s float64) {
		c.Queued, c.QueueSeconds = n, s
	})
	return out, nil
}

// hubTimingRates turns two readings into figures per change for every controller that
// reconciled meanwhile: reconciles, time in Reconcile, and the mean wait in its queue.
func hubTimingRates(before, after hubTiming, changes float64) []Metric {
	names := make([]string, 0, len(after))
	for n := range after {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Metric
	for _, n := range names {
		a, b := after[n], before[n]
		if b == nil {
			b = &controllerTiming{}
		}
		rec := a.Reconciles - b.Reconciles
		if rec <= 0 {
			continue
		}
		out = append(out,
			Metric{Name: "hub " + n + ": reconciles per change", Value: rec / changes, Unit: ""},
			Metric{Name: "hub " + n + ": time reconciling per change", Value: (a.ReconcileSeconds - b.ReconcileSeconds) / changes, Unit: "s"})
		if q := a.Queued - b.Queued; q > 0 {
			out = append(out, Metric{Name: "hub " + n + ": mean wait in queue", Value: (a.QueueSeconds - b.QueueSeconds) / q, Unit: "s"})
		}
	}
	return out
}
