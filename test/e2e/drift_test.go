package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// TestDriftCorrectReportIgnore: the same hand edit on three Bundles with the three drift
// modes: Correct restores it within seconds, Report records the field and leaves it,
// Ignore does neither. An ignore rule keeps a noisy field out of Correct.
func TestDriftCorrectReportIgnore(t *testing.T) {
	c := ensureJoined(t, 1)
	mode := func(m flv1.DriftMode, ignore ...flv1.IgnoreRule) func(*flv1.Bundle) {
		return func(b *flv1.Bundle) { b.Spec.Apply.Drift = m; b.Spec.Apply.IgnoreDifferences = ignore }
	}
	data := map[string]any{"level": "info", "noisy": "a"}
	createBundle(t, "team-drift", "correct", []string{c}, mode(flv1.DriftCorrect,
		flv1.IgnoreRule{Kind: "ConfigMap", JSONPointers: []string{"/data/noisy"}}), configMapObj("cfg", data))
	createBundle(t, "team-drift", "report", []string{c}, mode(flv1.DriftReport), configMapObj("cfg", data))
	createBundle(t, "team-drift", "ignore", []string{c}, mode(flv1.DriftIgnore), configMapObj("cfg", data))
	for _, n := range []string{"correct", "report", "ignore"} {
		waitBundle(t, "team-drift", n, 60*time.Second, n+" ready", bundleReady(1))
	}

	start := time.Now()
	setMemberConfigMapValue(t, 1, "correct", "cfg", "level", "debug")
	waitMemberConfigMap(t, 1, "correct", "cfg", 15*time.Second, "Correct restores the edit", hasValue("level", "info"))
	t.Logf("Correct: a hand edit was restored %s after it was made", time.Since(start).Round(time.Millisecond))
	waitWork(t, c, "team-drift", "correct", 15*time.Second, "the correction is on record", func(w *flv1.Work) error {
		if d := workCondition(w, flv1.ConditionDrifted); d == nil || d.Reason != flv1.ReasonDriftCorrected || w.Status.Corrections < 1 {
			return fmt.Errorf("drifted: %+v, corrections %d", d, w.Status.Corrections)
		}
		return nil
	})
	setMemberConfigMapValue(t, 1, "correct", "cfg", "noisy", "b")
	memberConfigMapStays(t, 1, "correct", "cfg", 3*time.Second, "an ignored field is left alone", hasValue("noisy", "b"))

	// Deleting a delivered object is drift too.
	if err := memberClient(t, 1).CoreV1().ConfigMaps("correct").Delete(context.Background(), "cfg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMemberConfigMap(t, 1, "correct", "cfg", 15*time.Second, "Correct re-creates a deleted object", hasValue("level", "info"))

	setMemberConfigMapValue(t, 1, "report", "cfg", "level", "debug")
	w := waitWork(t, c, "team-drift", "report", 15*time.Second, "Report records the drift", func(w *flv1.Work) error {
		if d := workCondition(w, flv1.ConditionDrifted); d == nil || d.Status != "True" {
			return fmt.Errorf("not drifted yet")
		}
		return nil
	})
	var fields []string
	for _, r := range w.Status.Resources {
		for _, d := range r.Drift {
			fields = append(fields, fmt.Sprintf("%s %s: %s -> %s", r.Kind, d.Path, d.Desired, d.Live))
		}
	}
	if len(fields) != 1 || fields[0] != `ConfigMap /data/level: "info" -> "debug"` {
		t.Errorf("reported drift = %v, want the one changed field with both values", fields)
	}
	memberConfigMapStays(t, 1, "report", "cfg", 3*time.Second, "Report leaves the edit", hasValue("level", "debug"))
	waitBundle(t, "team-drift", "report", 15*time.Second, "the bundle counts the drifted cluster", func(b *flv1.Bundle) error {
		if b.Status.Drifted != 1 {
			return fmt.Errorf("drifted = %d", b.Status.Drifted)
		}
		return nil
	})
	out := mustFlotilla(t, "describe", "bundle", "report", "-n", "team-drift")
	if !strings.Contains(out, "drifted /data/level") || !strings.Contains(out, `live "debug"`) {
		t.Errorf("describe bundle does not show the drifted field:\n%s", out)
	}

	setMemberConfigMapValue(t, 1, "ignore", "cfg", "level", "debug")
	memberConfigMapStays(t, 1, "ignore", "cfg", 3*time.Second, "Ignore leaves the edit", hasValue("level", "debug"))
	if d := workCondition(getWork(t, c, "team-drift", "ignore"), flv1.ConditionDrifted); d != nil && d.Status == "True" {
		t.Errorf("Ignore reported drift: %+v", d)
	}
}

// TestBreakGlassExpires: break-glass suspends correction on one cluster, on record, and
// correction resumes by itself when it expires.
func TestBreakGlassExpires(t *testing.T) {
	c := ensureJoined(t, 2)
	createBundle(t, "team-bg", "guarded", []string{c}, nil, configMapObj("cfg", map[string]any{"level": "info"}))
	waitBundle(t, "team-bg", "guarded", 60*time.Second, "guarded ready", bundleReady(1))

	if out, err := flotilla(t, "breakglass", c, "--bundle", "guarded", "-n", "team-bg", "--for", "8s"); err == nil || !strings.Contains(out, "--reason") {
		t.Errorf("break-glass without a reason should be refused, got %v: %s", err, out)
	}
	out := mustFlotilla(t, "breakglass", c, "--bundle", "guarded", "-n", "team-bg", "--for", "8s", "--reason", "INC-42 hotfix")
	t.Log(strings.TrimSpace(out))
	if !strings.Contains(out, "acknowledged by the agent") {
		t.Fatalf("breakglass did not wait for the agent's acknowledgement:\n%s", out)
	}
	bg := getWork(t, c, "team-bg", "guarded").Spec.BreakGlass
	if bg == nil || bg.Reason != "INC-42 hotfix" || bg.By == "" {
		t.Fatalf("break-glass record = %+v", bg)
	}
	expires := bg.Until.Time
	setMemberConfigMapValue(t, 2, "guarded", "cfg", "level", "debug")
	waitWork(t, c, "team-bg", "guarded", 10*time.Second, "drift reported under break-glass", func(w *flv1.Work) error {
		d := workCondition(w, flv1.ConditionDrifted)
		if d == nil || d.Status != "True" || d.Reason != flv1.ReasonBreakGlassActive || !strings.Contains(d.Message, "INC-42 hotfix") {
			return fmt.Errorf("drifted: %+v", d)
		}
		return nil
	})
	if left := time.Until(expires) - time.Second; left > 0 {
		memberConfigMapStays(t, 2, "guarded", "cfg", min(left, 3*time.Second), "not corrected during break-glass", hasValue("level", "debug"))
	} else {
		t.Errorf("break-glass expired before the test could check it holds (%s early)", -left)
	}
	desc := mustFlotilla(t, "describe", "bundle", "guarded", "-n", "team-bg")
	if !strings.Contains(desc, "break-glass") || !strings.Contains(desc, "INC-42 hotfix") {
		t.Errorf("describe does not show the break-glass record:\n%s", desc)
	}
	waitMemberConfigMap(t, 2, "guarded", "cfg", 20*time.Second, "correction resumes at expiry", hasValue("level", "info"))
	t.Logf("corrected %s after the break-glass expired", time.Since(expires).Round(100*time.Millisecond))
}
