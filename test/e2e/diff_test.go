package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// exitCode is the exit status of a finished flotilla command (0 when err is nil).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("flotilla did not run: %v", err)
	return -1
}

// TestDiffBundle: "flotilla diff bundle" shows what a change would do on one cluster before
// it is applied, rendered with that cluster's overrides and variables, with kubectl diff's
// exit status; and it shows drift the agent reported.
func TestDiffBundle(t *testing.T) {
	c := ensureJoined(t, 2) // prod, eu-west
	other := ensureJoined(t, 1)
	eu := func(b *flv1.Bundle) {
		b.Spec.Apply.Drift = flv1.DriftReport
		b.Spec.Overrides = []flv1.OverrideRule{{Name: "eu-replicas",
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu-west"}},
			Target:          &flv1.ResourceSelector{Group: "apps", Kind: "Deployment", Name: "web"},
			JSONPatch:       []flv1.JSONPatchOperation{{Op: "replace", Path: "/spec/replicas", Value: jsonValue(t, 3)}}}}
	}
	b := createBundle(t, "team-diff", "preview", []string{c}, eu, deployment("web", 1, "nginx:1.27"),
		configMapObj("cfg", map[string]any{"level": "info"}))
	waitBundle(t, "team-diff", "preview", 90*time.Second, "preview ready", bundleReady(1))

	out, err := flotilla(t, "diff", "bundle", "preview", "-n", "team-diff", "--cluster", c)
	if code := exitCode(t, err); code != 0 || !strings.Contains(out, "0 to create, 0 to change, 0 to delete, 2 unchanged") {
		t.Fatalf("a cluster that caught up should show no change and exit 0, got %d:\n%s", code, out)
	}

	// The change as a user would write it: a new image, and a new ConfigMap with a variable.
	changed := b.DeepCopy()
	changed.TypeMeta = metav1.TypeMeta{APIVersion: flv1.GroupVersion.String(), Kind: "Bundle"}
	changed.ObjectMeta = metav1.ObjectMeta{Name: "preview", Namespace: "team-diff"}
	changed.Status = flv1.BundleStatus{}
	changed.Spec.Source.Inline.Resources = rawObjects(t, deployment("web", 1, "nginx:1.28"),
		configMapObj("cfg", map[string]any{"level": "info"}), configMapObj("whoami", map[string]any{"cluster": "${cluster.name}"}))
	y, err := yaml.Marshal(changed)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "preview.yaml")
	if err := os.WriteFile(file, y, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = flotilla(t, "diff", "bundle", "preview", "-n", "team-diff", "--cluster", c, "-f", file)
	if code := exitCode(t, err); code != 1 {
		t.Fatalf("a pending change should exit 1, got %d:\n%s", code, out)
	}
	for _, want := range []string{
		"Deployment.apps preview/web: change", "-      - image: nginx:1.27", "+      - image: nginx:1.28",
		"ConfigMap preview/whoami: create", "+  cluster: " + c, "1 to create, 1 to change, 0 to delete, 1 unchanged",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "replicas: 1") {
		t.Errorf("the diff ignores the cluster's override (replicas 3 for eu-west):\n%s", out)
	}
	// Nothing was applied: the Work still asks for the current revision, already observed.
	if w := getWork(t, c, "team-diff", "preview"); w.Spec.Revision != getBundle(t, "team-diff", "preview").Status.Revision || w.Generation != w.Status.ObservedGeneration {
		t.Errorf("diff changed the Work")
	}

	out, err = flotilla(t, "diff", "bundle", "preview", "-n", "team-diff", "--cluster", other, "-f", file)
	if code := exitCode(t, err); code != 0 || !strings.Contains(out, "does not place "+other) {
		t.Errorf("a cluster the Bundle does not place: exit %d:\n%s", code, out)
	}
	out, err = flotilla(t, "diff", "bundle", "preview", "-n", "team-diff", "--cluster", "no-such-cluster")
	if code := exitCode(t, err); code != 2 || !strings.Contains(out, "no-such-cluster") {
		t.Errorf("an unknown cluster should be an error (exit 2), got %d:\n%s", code, out)
	}

	setMemberConfigMapValue(t, 2, "preview", "cfg", "level", "debug")
	waitWork(t, c, "team-diff", "preview", 15*time.Second, "drift reported", func(w *flv1.Work) error {
		if d := workCondition(w, flv1.ConditionDrifted); d == nil || d.Status != "True" {
			return errors.New("not drifted yet")
		}
		return nil
	})
	out, err = flotilla(t, "diff", "bundle", "preview", "-n", "team-diff", "--cluster", c)
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, `ConfigMap preview/cfg /data/level: desired "info", live "debug"`) {
		t.Errorf("reported drift should show and exit 1, got %d:\n%s", code, out)
	}
}
