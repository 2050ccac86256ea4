package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPercentileAndMedian(t *testing.T) {
	lat := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {0, 1}, {1, 10}} {
		if got := pct(lat, c.p); got != c.want {
			t.Errorf("pct(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	runs := [][]time.Duration{{1, 9}, {1, 3}, {2, 5}}
	if got := runs[medianRun(runs)]; got[len(got)-1] != 5 {
		t.Errorf("median run ends at %v, want the run whose slowest cluster is the median (5)", got[len(got)-1])
	}
	if runs[0][1] != 9 || runs[1][1] != 3 || runs[2][1] != 5 {
		t.Errorf("medianRun reordered the runs: %v", runs)
	}
}

func TestTargetsAreJudged(t *testing.T) {
	r := Result{Scenario: ScenarioFanout, Clusters: 1000, Agents: "simulated"}
	r.addTarget("p99", 2.5, "s", targetP99At1000)
	r.addTarget("total / baseline", 1.2, "x", targetBaselineRatio)
	r.add("p50", 0.7, "s")
	var out bytes.Buffer
	(&Report{Machine: Machine{CPUs: 2}, Results: []Result{r}}).WriteTable(&out)
	for _, want := range []string{"fanout, 1000 clusters (simulated agents)", "p99", "2.50 s", "<= 2.00 s: NOT MET", "<= 1.50 x: met", "0.70 s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if m, _ := r.Get("p50"); m.Max != nil || m.Met != nil {
		t.Errorf("a figure without a target got one: %+v", m)
	}
}

func TestReadUsageOfThisProcess(t *testing.T) {
	a, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if a.RSS == 0 || a.Anon == 0 || a.Anon > a.RSS {
		t.Fatalf("RSS %d, private %d: want 0 < private <= RSS", a.RSS, a.Anon)
	}
	deadline := time.Now().Add(2 * time.Second) // burn CPU until the kernel counted some
	for time.Now().Before(deadline) {
		if b, _ := readUsage(os.Getpid()); b.CPU > a.CPU {
			if m := cpuBetween(a, b); m <= 0 { // tick granularity makes the upper bound loose

				t.Fatalf("cpuBetween = %v millicores", m)
			}
			return
		}
	}
	t.Fatal("no CPU time counted after 2 s of spinning")
}

func TestWritesPerCluster(t *testing.T) {
	const text = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="flotilla.dev",resource="works",scope="resource",subresource="",verb="APPLY",version="v1alpha1"} 300
apiserver_request_total{code="409",component="apiserver",dry_run="",group="flotilla.dev",resource="works",scope="resource",subresource="",verb="APPLY",version="v1alpha1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="flotilla.dev",resource="works",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 200
apiserver_request_total{code="200",component="apiserver",dry_run="",group="flotilla.dev",resource="works",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 999
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="APPLY",version="v1"} 1
`
	families, err := parseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	after := apiWritesOf(families)
	want := map[string]float64{"APPLY works": 400, "APPLY works/status": 200, "APPLY leases": 1}
	if len(after) != len(want) {
		t.Fatalf("parsed %v, want %v (reads are not writes)", after, want)
	}
	for k, v := range want {
		if after[k] != v {
			t.Errorf("%s = %v, want %v", k, after[k], v)
		}
	}
	// 100 clusters, 2 changes: works 2 per cluster and change, status 1; leases under 0.01
	// count in the total only.
	got := writeRates(map[string]float64{"APPLY works": 0}, after, 100*2, "API writes per cluster", "writes")
	wantNames := []string{"API writes per cluster (all)", "API writes per cluster: APPLY works", "API writes per cluster: APPLY works/status"}
	wantValues := []float64{3.005, 2, 1}
	if len(got) != len(wantNames) {
		t.Fatalf("got %+v", got)
	}
	for i := range got {
		if got[i].Name != wantNames[i] || got[i].Value != wantValues[i] {
			t.Errorf("row %d = %s %v, want %s %v", i, got[i].Name, got[i].Value, wantNames[i], wantValues[i])
		}
	}
}
