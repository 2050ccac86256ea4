package bench

import "testing"

func TestHubTimingPerChange(t *testing.T) {
	const before = `# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="bundle",le="+Inf"} 10
controller_runtime_reconcile_time_seconds_sum{controller="bundle"} 1
controller_runtime_reconcile_time_seconds_count{controller="bundle"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="source",le="+Inf"} 4
controller_runtime_reconcile_time_seconds_sum{controller="source"} 0.5
controller_runtime_reconcile_time_seconds_count{controller="source"} 4
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{controller="bundle",name="bundle",le="+Inf"} 10
workqueue_queue_duration_seconds_sum{controller="bundle",name="bundle"} 0.2
workqueue_queue_duration_seconds_count{controller="bundle",name="bundle"} 10
`
	const after = `# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="bundle",le="+Inf"} 16
controller_runtime_reconcile_time_seconds_sum{controller="bundle"} 4
controller_runtime_reconcile_time_seconds_count{controller="bundle"} 16
controller_runtime_reconcile_time_seconds_bucket{controller="source",le="+Inf"} 4
controller_runtime_reconcile_time_seconds_sum{controller="source"} 0.5
controller_runtime_reconcile_time_seconds_count{controller="source"} 4
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{controller="bundle",name="bundle",le="+Inf"} 16
workqueue_queue_duration_seconds_sum{controller="bundle",name="bundle"} 1.4
workqueue_queue_duration_seconds_count{controller="bundle",name="bundle"} 16
`
	b, err := parseHubTiming(before)
	if err != nil {
		t.Fatal(err)
	}
	a, err := parseHubTiming(after)
	if err != nil {
		t.Fatal(err)
	}
	// Two changes: 6 bundle reconciles (3 per change) of 3 s in all, 6 queued for 1.2 s;
	// the source controller did nothing meanwhile and is left out.
	got := hubTimingRates(b, a, 2)
	want := []Metric{
		{Name: "hub bundle: reconciles per change", Value: 3},
		{Name: "hub bundle: time reconciling per change", Value: 1.5, Unit: "s"},
		{Name: "hub bundle: mean wait in queue", Value: 0.2, Unit: "s"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Unit != want[i].Unit || !near(got[i].Value, want[i].Value) {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestCounterSumAndGauge(t *testing.T) {
	const text = `# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="a",priority_level="throttled",reason="queue-full"} 3
apiserver_flowcontrol_rejected_requests_total{flow_schema="b",priority_level="throttled",reason="time-out"} 2
apiserver_flowcontrol_rejected_requests_total{flow_schema="c",priority_level="other",reason="queue-full"} 7
# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="throttled"} 1
`
	fams, err := parseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := counterSum(fams, "apiserver_flowcontrol_rejected_requests_total", "priority_level", "throttled"); got != 5 {
		t.Errorf("rejected in throttled = %v, want 5", got)
	}
	if got := counterSum(fams, "no_such_family", "priority_level", "throttled"); got != 0 {
		t.Errorf("absent family = %v, want 0", got)
	}
	if v, ok := gauge(fams, "apiserver_flowcontrol_nominal_limit_seats", "priority_level", "throttled"); !ok || v != 1 {
		t.Errorf("seats = %v %v, want 1 true", v, ok)
	}
	if _, ok := gauge(fams, "apiserver_flowcontrol_nominal_limit_seats", "priority_level", "other"); ok {
		t.Error("a level without a gauge was found")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
