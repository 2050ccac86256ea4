package bench

import (
	"context"
	"sort"

	dto "github.com/prometheus/client_model/go"
)

// writeVerbs are the API server's request verbs that write to etcd.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// apiWrites reads the API server's own count of write requests so far, by verb and
// resource (e.g. "APPLY works/status"): the difference over a fan-out says what it cost.
func (e *Env) apiWrites(ctx context.Context) (map[string]float64, error) {
	families, err := e.apiMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return apiWritesOf(families), nil
}

func apiWritesOf(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if !writeVerbs[l["verb"]] {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// writeRates turns two counts into writes per divisor (clusters × changes, or clusters ×
// minutes), named name: the total, then each verb and resource of at least 0.01, largest first.
func writeRates(before, after map[string]float64, divisor float64, name, unit string) []Metric {
	var out []Metric
	total := 0.0
	for k, v := range after {
		per := (v - before[k]) / divisor
		total += per
		if per < 0.01 {
			continue
		}
		out = append(out, Metric{Name: name + ": " + k, Value: per, Unit: unit})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value > out[j].Value })
	return append([]Metric{{Name: name + " (all)", Value: total, Unit: unit}}, out...)
}
