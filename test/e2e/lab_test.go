package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"flotilla.dev/flotilla/internal/lab"
	"flotilla.dev/flotilla/internal/proc"
)

// TestLabUpStatusDown drives the lab as a user would: up, up again (a no-op), status with
// every cluster Ready, down, and then not one of its processes is left.
func TestLabUpStatusDown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, append(args, "--dir", dir)...).CombinedOutput()
		if err != nil {
			t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("lab", "up", "--clusters", "2")
	st, err := lab.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	procs := lab.Processes(dir, st)
	t.Cleanup(func() { _, _ = exec.Command(binary, "lab", "down", "--dir", dir).CombinedOutput() })
	if out := run("lab", "up", "--clusters", "2"); !strings.Contains(out, "already running") {
		t.Errorf("second lab up:\n%s", out)
	}
	out := run("lab", "status")
	for _, m := range lab.Plan(2) {
		if !strings.Contains(out, m.Name) {
			t.Errorf("lab status lacks %s:\n%s", m.Name, out)
		}
	}
	if strings.Count(out, " True ") != 2 || strings.Contains(out, "STOPPED") {
		t.Errorf("lab status: want 2 Ready clusters and all processes running:\n%s", out)
	}
	// 1 etcd + hub (apiserver, controller-manager) + 2 x (apiserver, kcm, scheduler, kwok) + hub controllers + 2 agents
	if len(procs) != 1+2+8+1+2 {
		t.Errorf("lab runs %d processes, want 14: %+v", len(procs), procs)
	}
	run("lab", "down")
	for _, p := range procs {
		if proc.Alive(p.Pid) {
			t.Errorf("%s (pid %d) outlived lab down", p.Name, p.Pid)
		}
	}
	if out, err := exec.Command(binary, "lab", "status", "--dir", dir).CombinedOutput(); err == nil {
		t.Errorf("lab status after down should fail:\n%s", out)
	}
}
