package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"flotilla.dev/flotilla/internal/testenv"
)

// Report is everything one `flotilla bench` run measured, and where.
type Report struct {
	Machine Machine  `json:"machine"`
	Results []Result `json:"results"`
}

// Machine describes where the figures were measured: they mean little elsewhere.
type Machine struct {
	Host       string    `json:"host"`
	CPUs       int       `json:"cpus"`
	MemoryGiB  float64   `json:"memoryGiB"`
	Kubernetes string    `json:"kubernetes"`
	Date       time.Time `json:"date"`
}

// Result is one scenario at one fleet size.
type Result struct {
	Scenario string `json:"scenario"`
	Clusters int    `json:"clusters"`
	// Agents says what the members were: "simulated" (in-memory member side) or "real".
	Agents  string   `json:"agents"`
	Metrics []Metric `json:"metrics"`
}

// Metric is one figure, with the design's target when it has one.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Max is the target: the value must not exceed it.
	Max *float64 `json:"max,omitempty"`
	Met *bool    `json:"met,omitempty"`
}

func (r *Result) add(name string, value float64, unit string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit})
}

func (r *Result) addTarget(name string, value float64, unit string, maxValue float64) {
	met := value <= maxValue
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit, Max: &maxValue, Met: &met})
}

func (r *Result) seconds(name string, d time.Duration) { r.add(name, d.Seconds(), "s") }

// Get returns the metric called name (for tests and ratios).
func (r *Result) Get(name string) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

func machine() Machine {
	m := Machine{Host: hostname(), CPUs: runtime.NumCPU(), Date: time.Now().UTC(), Kubernetes: testenv.Version}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %f kB", &kb); err == nil {
			m.MemoryGiB = float64(int(kb/1024/1024*10+0.5)) / 10
		}
	}
	return m
}

// WriteTable prints one table per result.
func (rep *Report) WriteTable(w io.Writer) {
	m := rep.Machine
	fmt.Fprintf(w, "Measured on %s: %d CPUs, %.1f GiB, Kubernetes %s, %s\n", m.Host, m.CPUs, m.MemoryGiB, m.Kubernetes, m.Date.Format(time.RFC3339))
	for _, r := range rep.Results {
		fmt.Fprintf(w, "\n%s, %d clusters (%s agents)\n", r.Scenario, r.Clusters, r.Agents)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  METRIC\tVALUE\tTARGET\t")
		for _, x := range r.Metrics {
			target := ""
			if x.Max != nil {
				verdict := "met"
				if !*x.Met {
					verdict = "NOT MET"
				}
				target = fmt.Sprintf("<= %s %s: %s", num(*x.Max), x.Unit, verdict)
			}
			fmt.Fprintf(tw, "  %s\t%s %s\t%s\t\n", x.Name, num(x.Value), x.Unit, target)
		}
		_ = tw.Flush()
	}
}

// WriteJSON prints the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// num prints a figure with about three significant digits.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
