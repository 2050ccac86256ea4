package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/join"
)

// threeWaveStrategy: dev (ring 0, soak), staging (ring 1, approval), then the remaining prod
// clusters two at a time.
func threeWaveStrategy(soak time.Duration) *flv1.RolloutStrategy {
	two := intstr.FromInt32(2)
	return &flv1.RolloutStrategy{
		Waves: []flv1.Wave{
			{Name: "dev", ClusterSelector: ringSelector("0"), Soak: duration(soak)},
			{Name: "staging", ClusterSelector: ringSelector("1"), Approval: true},
		},
		RemainingMaxConcurrent: &two,
		ProgressDeadline:       duration(45 * time.Second),
	}
}

// startOnA creates a Bundle on the rollout fleet without a strategy and waits until every
// cluster runs its first revision (A), which it returns.
func startOnA(t *testing.T, ns, name string, fleet map[int]string, objs ...map[string]any) string {
	t.Helper()
	createBundle(t, ns, name, names(fleet), nil, objs...)
	return waitBundle(t, ns, name, 90*time.Second, "revision A everywhere", bundleReady(int32(len(fleet)))).Status.Revision
}

// TestRolloutPassesWavesWithSoakAndApproval (scenario a): a healthy release passes three
// waves; the approval gate really waits until someone approves.
func TestRolloutPassesWavesWithSoakAndApproval(t *testing.T) {
	fleet := rolloutFleet(t)
	const ns, name = "team-waves", "web"
	revA := startOnA(t, ns, name, fleet, configMapObj("web", map[string]any{"v": "A"}), deployment("web", 1, "nginx:1.27"))

	ro := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Rollout = threeWaveStrategy(3 * time.Second)
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("web", map[string]any{"v": "B"}), deployment("web", 2, "nginx:1.27"))
	})
	revB := ro.Spec.To
	if ro.Spec.From != revA || revB == revA {
		t.Fatalf("rollout %s moves %s -> %s, want %s -> a new revision", ro.Name, ro.Spec.From, revB, revA)
	}
	start := time.Now()
	ro = waitRollout(t, ns, ro.Name, 90*time.Second, "dev passes, staging waits for approval", inPhase(flv1.PhaseWaitingForApproval))
	if ro.Status.Waves[0].Phase != flv1.WavePassed || ro.Status.Waves[0].SoakStartedAt == nil {
		t.Errorf("dev wave %+v, want passed after soaking", ro.Status.Waves[0])
	}
	if soaked := ro.Status.Waves[0].FinishedAt.Sub(ro.Status.Waves[0].SoakStartedAt.Time); soaked < 3*time.Second {
		t.Errorf("dev soaked %s, want at least 3s", soaked)
	}
	if !strings.Contains(ro.Status.Message, "flotilla rollout approve web -n team-waves --wave staging") {
		t.Errorf("message %q does not say how to approve", ro.Status.Message)
	}
	// The gate holds: nothing beyond dev moves while nobody approves.
	time.Sleep(5 * time.Second)
	ro = waitRollout(t, ns, ro.Name, time.Second, "still waiting", inPhase(flv1.PhaseWaitingForApproval))
	want := map[string]string{fleet[0]: revB, fleet[1]: revA, fleet[2]: revA, fleet[6]: revA, fleet[7]: revA, fleet[8]: revA}
	expectRevisions(t, ns, name, want)
	waitMemberConfigMap(t, 0, name, "web", 10*time.Second, "dev runs B", hasValue("v", "B"))
	waitMemberConfigMap(t, 1, name, "web", time.Second, "staging still runs A", hasValue("v", "A"))

	// Paused, an approval does not start the wave; resumed, it does.
	mustFlotilla(t, "rollout", "pause", name, "-n", ns, "--reason", "lunch")
	waitRollout(t, ns, ro.Name, 10*time.Second, "paused", inPhase(flv1.PhasePaused))
	out := mustFlotilla(t, "rollout", "approve", name, "-n", ns, "--wave", "staging", "--comment", "dev is fine")
	t.Logf("approve: %s", strings.TrimSpace(out))
	time.Sleep(2 * time.Second)
	waitRollout(t, ns, ro.Name, time.Second, "still paused", inPhase(flv1.PhasePaused))
	expectRevisions(t, ns, name, map[string]string{fleet[1]: revA})
	if _, err := flotilla(t, "rollout", "approve", name, "-n", ns, "--wave", "nope"); err == nil {
		t.Error("approving a wave that does not exist succeeded")
	}
	mustFlotilla(t, "rollout", "resume", name, "-n", ns)
	ro = waitRollout(t, ns, ro.Name, 3*time.Minute, "rollout succeeds", inPhase(flv1.PhaseSucceeded))
	if a := ro.Spec.Actions; len(a) != 2 || a[0].Action != "Pause" || a[0].Reason != "lunch" || a[1].Action != "Resume" {
		t.Errorf("actions %+v", a)
	}
	t.Logf("rollout %s succeeded %s after dev passed", ro.Name, time.Since(start).Round(100*time.Millisecond))
	for c := range want {
		want[c] = revB
	}
	expectRevisions(t, ns, name, want)
	for _, i := range rolloutMembers {
		waitMemberConfigMap(t, i, name, "web", 10*time.Second, "B everywhere", hasValue("v", "B"))
	}
	if ro.Status.Clusters.Updated != 6 || ro.Status.Clusters.Healthy != 6 || ro.Status.UpdatedPercent != 100 || ro.Status.FailureBudget.Used != 0 {
		t.Errorf("status %+v", ro.Status.Clusters)
	}
	if a := ro.Spec.Approvals; len(a) != 1 || a[0].Wave != "staging" || a[0].Comment != "dev is fine" || a[0].By == "" {
		t.Errorf("approvals %+v", a)
	}
	for _, ws := range ro.Status.Waves {
		if ws.Phase != flv1.WavePassed || ws.StartedAt == nil || ws.FinishedAt == nil {
			t.Errorf("wave %+v", ws)
		}
	}
	// The staging wave started only after the approval.
	if st := ro.Status.Waves[1].StartedAt; st.Before(&ro.Spec.Approvals[0].At) && st.Add(time.Second).Before(ro.Spec.Approvals[0].At.Time) {
		t.Errorf("staging started at %s, before its approval at %s", st, ro.Spec.Approvals[0].At)
	}
	events := rolloutEvents(t, ro)
	for _, e := range []string{"WaveStarted", "WavePassed", "WaitingForApproval", "Succeeded"} {
		if !strings.Contains(events, e) {
			t.Errorf("events %q lack %s", events, e)
		}
	}
	b := getBundle(t, ns, name)
	if b.Status.Rollout == nil || b.Status.Rollout.Phase != flv1.PhaseSucceeded {
		t.Errorf("bundle rollout %+v", b.Status.Rollout)
	}
	metrics := scrapeHub(t)
	for _, series := range []string{
		fmt.Sprintf(`flotilla_rollout_phase{bundle="web",namespace="team-waves",phase="Succeeded",rollout=%q} 1`, ro.Name),
		`flotilla_rollout_progress_ratio{bundle="web",namespace="team-waves"} 1`,
		`flotilla_rollout_failure_budget_used{bundle="web",namespace="team-waves"} 0`,
		`flotilla_rollout_clusters{bundle="web",namespace="team-waves",state="healthy"} 6`,
	} {
		if !strings.Contains(metrics, series) {
			t.Errorf("hub /metrics lacks %s", series)
		}
	}
}

// TestBadReleaseExhaustsBudgetAndRollsBack (scenario b): a release whose pods never become
// ready on prod and staging fails in wave 2, exhausts the budget and halts; with
// onFailure: Rollback every moved cluster returns to A, and wave 3 is never touched.
func TestBadReleaseExhaustsBudgetAndRollsBack(t *testing.T) {
	fleet := rolloutFleet(t)
	const ns, name = "team-bad-release", "api"
	revA := startOnA(t, ns, name, fleet, configMapObj("api", map[string]any{"v": "A"}), deployment("api", 1, "nginx:1.27"))

	one := intstr.FromInt32(1)
	ro := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Rollout = &flv1.RolloutStrategy{
			Waves: []flv1.Wave{
				{Name: "dev", ClusterSelector: ringSelector("0")},
				{Name: "early", ClusterSelector: ringSelector("1", "2")},
			},
			ProgressDeadline: duration(10 * time.Second),
			FailureBudget:    &one,
			OnFailure:        flv1.FailureRollback,
		}
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("api", map[string]any{"v": "B"}), deployment("api", 1, "nginx:1.28"))
		// B's pods cannot be scheduled outside dev.
		b.Spec.Overrides = []flv1.OverrideRule{{Name: "unschedulable-outside-dev",
			ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}}}},
			Target:          &flv1.ResourceSelector{Group: "apps", Kind: "Deployment", Name: "api"},
			MergePatch:      jsonValue(t, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"nodeSelector": map[string]any{"no-such-node": "true"}}}}}),
		}}
	})
	ro = waitRollout(t, ns, ro.Name, 3*time.Minute, "rolled back", inPhase(flv1.PhaseRolledBack))

	if ro.Status.HaltReason != flv1.ReasonBudgetExhausted || ro.Status.FailureBudget.Used != 2 || ro.Status.FailureBudget.Allowed != 1 {
		t.Errorf("halt %q, budget %+v", ro.Status.HaltReason, ro.Status.FailureBudget)
	}
	failed := map[string]string{}
	for _, f := range ro.Status.FailedClusters {
		failed[f.Cluster] = f.Reason
		if f.Wave != "early" || !strings.Contains(f.Reason, "not healthy 10s after the update") {
			t.Errorf("failure %+v", f)
		}
	}
	if len(failed) != 2 || failed[fleet[1]] == "" || failed[fleet[2]] == "" {
		t.Errorf("failed clusters %+v, want %s and %s", ro.Status.FailedClusters, fleet[1], fleet[2])
	}
	if len(ro.Status.FailuresByDimension) == 0 {
		t.Error("no failures by dimension")
	}
	t.Logf("failures: %+v; by dimension: %+v", ro.Status.FailedClusters, ro.Status.FailuresByDimension)
	want := map[string]string{}
	for _, c := range fleet {
		want[c] = revA
	}
	expectRevisions(t, ns, name, want)
	waitMemberConfigMap(t, 0, name, "api", 30*time.Second, "dev back on A", hasValue("v", "A"))
	waitMemberConfigMap(t, 1, name, "api", 30*time.Second, "staging back on A", hasValue("v", "A"))
	// Wave 3 was never touched: its Works never carried B nor this rollout's record.
	for _, i := range []int{6, 7, 8} {
		w := getWork(t, fleet[i], ns, name)
		if w.Spec.Rollout != nil && w.Spec.Rollout.Name == ro.Name {
			t.Errorf("cluster %s was touched: %+v", fleet[i], w.Spec.Rollout)
		}
	}
	events := rolloutEvents(t, ro)
	for _, e := range []string{"ClusterFailed", "RollingBack", "RolledBack"} {
		if !strings.Contains(events, e) {
			t.Errorf("events %q lack %s", events, e)
		}
	}
	b := getBundle(t, ns, name)
	if c := readyOf(b); c == nil || c.Reason != flv1.ReasonRolledBack {
		t.Errorf("bundle Ready %+v, want RolledBack", c)
	}
}

func readyOf(b *flv1.Bundle) *metav1.Condition {
	for i := range b.Status.Conditions {
		if b.Status.Conditions[i].Type == flv1.ConditionReady {
			return &b.Status.Conditions[i]
		}
	}
	return nil
}

// TestUndoAfterSuccess (scenario f): `flotilla rollout undo` after a rollout succeeded
// returns the whole fleet to A, as one operation visible in the same Rollout.
func TestUndoAfterSuccess(t *testing.T) {
	fleet := rolloutFleet(t)
	const ns, name = "team-undo", "cfg"
	revA := startOnA(t, ns, name, fleet, configMapObj("cfg", map[string]any{"v": "A"}))
	ro := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Rollout = &flv1.RolloutStrategy{Waves: []flv1.Wave{{Name: "dev", ClusterSelector: ringSelector("0")}}}
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("cfg", map[string]any{"v": "B"}))
	})
	waitRollout(t, ns, ro.Name, 2*time.Minute, "succeeded", inPhase(flv1.PhaseSucceeded))
	out := mustFlotilla(t, "rollout", "undo", name, "-n", ns, "--reason", "customer reports")
	t.Logf("undo: %s", strings.TrimSpace(out))
	ro = waitRollout(t, ns, ro.Name, time.Minute, "rolled back", inPhase(flv1.PhaseRolledBack))
	want := map[string]string{}
	for _, c := range fleet {
		want[c] = revA
	}
	expectRevisions(t, ns, name, want)
	for _, i := range rolloutMembers {
		waitMemberConfigMap(t, i, name, "cfg", 10*time.Second, "A everywhere", hasValue("v", "A"))
	}
	if a := ro.Spec.Actions; len(a) != 1 || a[0].Action != "Rollback" || a[0].Reason != "customer reports" || a[0].By == "" {
		t.Errorf("actions %+v", a)
	}
}

// TestUnreachableClusterFailsAfterDeadlineWithinBudget (scenario c): one agent is killed
// during its wave; its cluster counts as failed once its deadline passes, and the rollout
// goes on within its budget. The cluster catches up when its agent returns.
func TestUnreachableClusterFailsAfterDeadlineWithinBudget(t *testing.T) {
	fleet := rolloutFleet(t)
	const ns, name = "team-lost-agent", "cfg"
	startOnA(t, ns, name, fleet, configMapObj("cfg", map[string]any{"v": "A"}))
	one := intstr.FromInt32(1)
	ro := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Rollout = &flv1.RolloutStrategy{
			Waves:            []flv1.Wave{{Name: "dev", ClusterSelector: ringSelector("0"), Soak: duration(time.Second)}},
			ProgressDeadline: duration(10 * time.Second), FailureBudget: &one, RemainingMaxConcurrent: &one,
		}
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("cfg", map[string]any{"v": "B"}))
	})
	lost := fleet[8] // last by name: the remaining wave moves it last, one at a time
	waitRollout(t, ns, ro.Name, time.Minute, "the remaining wave runs", func(ro *flv1.Rollout) error {
		if len(ro.Status.Waves) < 2 || ro.Status.Waves[1].Phase != flv1.WaveProgressing {
			return fmt.Errorf("waves %+v", ro.Status.Waves)
		}
		return nil
	})
	if _, err := join.StopLocalAgent(stateDir, lost, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = join.RestartLocalAgent(stateDir, binary, lost) })
	ro = waitRollout(t, ns, ro.Name, 2*time.Minute, "succeeds within budget", inPhase(flv1.PhaseSucceeded))
	if ro.Status.FailureBudget.Used != 1 || len(ro.Status.FailedClusters) != 1 || ro.Status.FailedClusters[0].Cluster != lost ||
		!strings.Contains(ro.Status.FailedClusters[0].Reason, "unreachable") {
		t.Fatalf("failures %+v, budget %+v", ro.Status.FailedClusters, ro.Status.FailureBudget)
	}
	t.Logf("failed: %+v", ro.Status.FailedClusters[0])
	want := map[string]string{}
	for _, c := range fleet {
		want[c] = ro.Spec.To
	}
	expectRevisions(t, ns, name, want)
	if _, err := join.RestartLocalAgent(stateDir, binary, lost); err != nil {
		t.Fatal(err)
	}
	waitMemberConfigMap(t, 8, name, "cfg", time.Minute, "the returning cluster catches up", hasValue("v", "B"))
}

// TestHubRestartMidWaveResumes (scenario d): the hub is killed while a wave soaks and
// started again: the rollout resumes where it stopped, moving no cluster twice and
// skipping none.
func TestHubRestartMidWaveResumes(t *testing.T) {
	fleet := rolloutFleet(t)
	const ns, name = "team-hub-restart", "cfg"
	startOnA(t, ns, name, fleet, configMapObj("cfg", map[string]any{"v": "A"}))
	two := intstr.FromInt32(2)
	ro := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Rollout = &flv1.RolloutStrategy{
			Waves:                  []flv1.Wave{{Name: "dev", ClusterSelector: ringSelector("0"), Soak: duration(8 * time.Second)}},
			RemainingMaxConcurrent: &two, ProgressDeadline: duration(time.Minute),
		}
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("cfg", map[string]any{"v": "B"}))
	})
	waitRollout(t, ns, ro.Name, time.Minute, "dev soaks", inPhase(flv1.PhaseSoaking))
	moved := getWork(t, fleet[0], ns, name).Spec.Rollout
	if moved == nil || moved.Name != ro.Name {
		t.Fatalf("dev record %+v", moved)
	}
	t.Cleanup(func() { ensureHubRunning(t) })
	hubProc.Kill()
	time.Sleep(2 * time.Second)
	// Nothing moves while the hub is down.
	expectRevisions(t, ns, name, map[string]string{fleet[1]: ro.Spec.From, fleet[8]: ro.Spec.From})
	ensureHubRunning(t)
	ro = waitRollout(t, ns, ro.Name, 2*time.Minute, "succeeds after the restart", inPhase(flv1.PhaseSucceeded))
	if again := getWork(t, fleet[0], ns, name).Spec.Rollout; again == nil || !again.MovedAt.Equal(&moved.MovedAt) {
		t.Errorf("dev was moved again: before %+v, after %+v", moved, again)
	}
	dev := ro.Status.Waves[0]
	if dev.SoakStartedAt == nil || dev.FinishedAt.Sub(dev.SoakStartedAt.Time) < 8*time.Second {
		t.Errorf("dev wave %+v did not soak 8s", dev)
	}
	for _, c := range fleet {
		w := getWork(t, c, ns, name)
		if w.Spec.Revision != ro.Spec.To || w.Spec.Rollout == nil || w.Spec.Rollout.Name != ro.Name {
			t.Errorf("cluster %s: revision %s, record %+v", c, w.Spec.Revision, w.Spec.Rollout)
		}
	}
	if ro.Status.Clusters.Updated != int32(len(fleet)) || ro.Status.FailureBudget.Used != 0 {
		t.Errorf("counts %+v, budget %+v", ro.Status.Clusters, ro.Status.FailureBudget)
	}
}

// TestWaveTimeoutHalts (scenario e): a wave that has not passed within waveTimeout halts
// the rollout; later waves are not touched, and the CLI shows why and what to do.
func TestWaveTimeoutHalts(t *testing.T) {
	fleet := rolloutFleet(t)
	const ns, name = "team-timeout", "slow"
	revA := startOnA(t, ns, name, fleet, configMapObj("slow", map[string]any{"v": "A"}))
	ro := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Rollout = &flv1.RolloutStrategy{
			Waves:       []flv1.Wave{{Name: "dev", ClusterSelector: ringSelector("0")}},
			WaveTimeout: duration(6 * time.Second), ProgressDeadline: duration(5 * time.Minute),
		}
		stuck := deployment("slow", 1, "nginx:1.27")
		stuck["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["nodeSelector"] = map[string]any{"no-such-node": "true"}
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("slow", map[string]any{"v": "B"}), stuck)
	})
	ro = waitRollout(t, ns, ro.Name, time.Minute, "halted", inPhase(flv1.PhaseHalted))
	if ro.Status.HaltReason != flv1.ReasonWaveTimedOut || ro.Status.Waves[0].Phase != flv1.WaveTimedOut {
		t.Errorf("halt %q, waves %+v", ro.Status.HaltReason, ro.Status.Waves)
	}
	want := map[string]string{fleet[0]: ro.Spec.To}
	for _, i := range []int{1, 2, 6, 7, 8} {
		want[fleet[i]] = revA
	}
	expectRevisions(t, ns, name, want)
	out := mustFlotilla(t, "rollout", "status", name, "-n", ns)
	for _, s := range []string{"Halted", "a wave timed out", "flotilla rollout undo " + name + " -n " + ns, "dev", "TimedOut", "remaining"} {
		if !strings.Contains(out, s) {
			t.Errorf("rollout status lacks %q:\n%s", s, out)
		}
	}
	t.Logf("flotilla rollout status:\n%s", out)
	b := getBundle(t, ns, name)
	if c := readyOf(b); c == nil || c.Reason != flv1.ReasonRolloutHalted {
		t.Errorf("bundle Ready %+v", c)
	}
}

// TestNewRevisionSupersedesRolloutInFlight: revision C arrives while A -> B waits for an
// approval. The first rollout is Superseded; the second moves the fleet from A (B never fully
// rolled out) to C, wave by wave. No cluster is ever on anything but A, B or C, and an undo of
// the second rollout would return everything to A.
func TestNewRevisionSupersedesRolloutInFlight(t *testing.T) {
	fleet := rolloutFleet(t)
	const ns, name = "team-supersede", "cfg"
	revA := startOnA(t, ns, name, fleet, configMapObj("cfg", map[string]any{"v": "A"}))
	first := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Rollout = threeWaveStrategy(time.Second)
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("cfg", map[string]any{"v": "B"}))
	})
	revB := first.Spec.To
	waitRollout(t, ns, first.Name, time.Minute, "A -> B waits for approval", inPhase(flv1.PhaseWaitingForApproval))
	expectRevisions(t, ns, name, map[string]string{fleet[0]: revB, fleet[1]: revA})

	second := changeAndRollOut(t, ns, name, func(b *flv1.Bundle) {
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("cfg", map[string]any{"v": "C"}))
	})
	revC := second.Spec.To
	if second.Name == first.Name || second.Spec.From != revA || revC == revB {
		t.Fatalf("second rollout %s moves %s -> %s, want a new rollout from %s", second.Name, second.Spec.From, revC, revA)
	}
	waitRollout(t, ns, first.Name, 10*time.Second, "the first is superseded", inPhase(flv1.PhaseSuperseded))
	known := map[string]bool{revA: true, revB: true, revC: true}
	check := func() {
		for c, rev := range workRevisions(t, ns, name, names(fleet)...) {
			if !known[rev] {
				t.Errorf("cluster %s on unknown revision %s", c, rev)
			}
		}
	}
	waitRollout(t, ns, second.Name, time.Minute, "B -> C in dev, then staging waits", func(ro *flv1.Rollout) error {
		check()
		return inPhase(flv1.PhaseWaitingForApproval)(ro)
	})
	expectRevisions(t, ns, name, map[string]string{fleet[0]: revC, fleet[1]: revA, fleet[8]: revA})
	mustFlotilla(t, "rollout", "approve", name, "-n", ns, "--wave", "staging")
	waitRollout(t, ns, second.Name, 2*time.Minute, "C everywhere", func(ro *flv1.Rollout) error {
		check()
		return inPhase(flv1.PhaseSucceeded)(ro)
	})
	for _, i := range rolloutMembers {
		waitMemberConfigMap(t, i, name, "cfg", 10*time.Second, "C everywhere", hasValue("v", "C"))
	}
	out := mustFlotilla(t, "rollout", "history", name, "-n", ns)
	for _, s := range []string{first.Name + "  " + revA + " -> " + revB + "  Superseded", second.Name + "  " + revA + " -> " + revC + "  Succeeded", "approved wave staging by"} {
		if !strings.Contains(out, s) {
			t.Errorf("rollout history lacks %q:\n%s", s, out)
		}
	}
}
