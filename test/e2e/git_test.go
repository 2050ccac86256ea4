package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub/source"
	"flotilla.dev/flotilla/internal/testenv"
)

const gitUser, gitPassword, webhookToken = "fleet", "s3cret", "hook-token"

// gitFixture is a Git server on loopback (git http-backend, basic auth) with one repository,
// and a GitRepository on the hub reading it with credentials and a webhook secret.
type gitFixture struct {
	srv  *testenv.GitServer
	work *testenv.GitWork
	ns   string
	repo string
}

func newGitFixture(t *testing.T, ns, repo string, files map[string]string) (*gitFixture, string) {
	t.Helper()
	tmp := t.TempDir()
	srv, err := testenv.StartGitServer(filepath.Join(tmp, "srv"), gitUser, gitPassword)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	w, err := srv.NewRepo(repo, filepath.Join(tmp, "work"))
	if err != nil {
		t.Fatal(err)
	}
	c1, err := w.Commit("main", "first", files, false)
	if err != nil {
		t.Fatal(err)
	}
	ensureHubNamespace(t, ns)
	ctx := context.Background()
	for name, data := range map[string]map[string][]byte{
		repo + "-creds": {"username": []byte(gitUser), "password": []byte(gitPassword)},
		repo + "-hook":  {"token": []byte(webhookToken)},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
		if err := hubC.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hubC.Delete(ctx, s) })
	}
	gr := &flv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: repo, Namespace: ns}, Spec: flv1.GitRepositorySpec{
		URL: w.URL, Interval: &metav1.Duration{Duration: 10 * time.Second},
		SecretRef:        &flv1.LocalObjectReference{Name: repo + "-creds"},
		WebhookSecretRef: &flv1.LocalObjectReference{Name: repo + "-hook"},
	}}
	if err := hubC.Create(ctx, gr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hubC.Delete(ctx, gr) })
	f := &gitFixture{srv: srv, work: w, ns: ns, repo: repo}
	f.waitCommit(t, 30*time.Second, c1)
	return f, c1
}

func (f *gitFixture) get(t *testing.T) *flv1.GitRepository {
	t.Helper()
	gr := &flv1.GitRepository{}
	if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: f.repo}, gr); err != nil {
		t.Fatal(err)
	}
	return gr
}

// waitCommit waits until the GitRepository's artifact is commit.
func (f *gitFixture) waitCommit(t *testing.T, timeout time.Duration, commit string) *flv1.GitRepository {
	t.Helper()
	var gr *flv1.GitRepository
	eventually(t, timeout, "GitRepository at "+commit[:12], func() error {
		gr = f.get(t)
		if a := gr.Status.Artifact; a == nil || a.Commit != commit {
			return fmt.Errorf("artifact %+v, conditions %s", gr.Status.Artifact, conditionsText(gr.Status.Conditions))
		}
		return nil
	})
	return gr
}

// waitReady waits until the GitRepository's Ready condition has the given status and reason.
func (f *gitFixture) waitReady(t *testing.T, timeout time.Duration, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	eventually(t, timeout, fmt.Sprintf("GitRepository Ready=%s/%s", status, reason), func() error {
		c = meta.FindStatusCondition(f.get(t).Status.Conditions, flv1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("ready %+v", c)
		}
		return nil
	})
	return c
}

// hook calls the hub's webhook for the repository, signed with token.
func (f *gitFixture) hook(t *testing.T, token string) int {
	t.Helper()
	body := []byte(`{"ref":"refs/heads/main"}`)
	req, err := http.NewRequest(http.MethodPost, hubWebhook+source.WebhookPath+f.ns+"/"+f.repo, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Hub-Signature-256", source.Sign([]byte(token), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func gitBundle(t *testing.T, ns, name, repo, path string, clusters []string, strategy *flv1.RolloutStrategy) {
	t.Helper()
	b := &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: flv1.BundleSpec{TargetNamespace: name, Placement: flv1.Placement{ClusterNames: clusters},
			Source:  flv1.BundleSource{Git: &flv1.GitSource{Repository: flv1.LocalObjectReference{Name: repo}, Path: path}},
			Rollout: strategy}}
	if err := hubC.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteBundle(t, ns, name) })
}

func cmYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {v: %q}\n", name, value)
}

func rolloutCount(t *testing.T, ns, bundle string) int {
	t.Helper()
	list := &flv1.RolloutList{}
	if err := hubC.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{flv1.LabelBundleName: bundle}); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestGitPushRollsOut: a Bundle renders a path of a Git repository; a push reaches the hub
// by webhook at once (and by interval without it), and opens a rollout; a commit that renders
// the same content opens none; a badly signed webhook call is refused.
func TestGitPushRollsOut(t *testing.T) {
	c0, c1name := ensureJoined(t, 0), ensureJoined(t, 1)
	const ns, name = "team-git", "web"
	f, first := newGitFixture(t, ns, "fleet", map[string]string{"apps/web/cm.yaml": cmYAML("web", "1"), "README.md": "fleet"})
	gitBundle(t, ns, name, "fleet", "apps/web", []string{c0, c1name}, &flv1.RolloutStrategy{Waves: []flv1.Wave{{Name: "dev", ClusterSelector: ringSelector("0")}}})
	b := waitBundle(t, ns, name, 90*time.Second, "first commit everywhere", bundleReady(2))
	if b.Status.SourceRevision != "main@"+first {
		t.Errorf("sourceRevision %q, want main@%s", b.Status.SourceRevision, first)
	}
	waitMemberConfigMap(t, 0, name, "web", 30*time.Second, "v=1", hasValue("v", "1"))
	firstRollouts := rolloutCount(t, ns, name)

	// A push, announced by webhook: fetched at once, well before the 10 s interval.
	second, err := f.work.Commit("main", "v2", map[string]string{"apps/web/cm.yaml": cmYAML("web", "2")}, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if code := f.hook(t, webhookToken); code != http.StatusAccepted {
		t.Fatalf("webhook answered %d", code)
	}
	f.waitCommit(t, 5*time.Second, second)
	t.Logf("webhook: commit fetched %s after the call", time.Since(start).Round(10*time.Millisecond))
	ro := waitRollout(t, ns, currentRolloutName(t, ns, name, 30*time.Second, "main@"+second), 2*time.Minute, "the push rolls out", inPhase(flv1.PhaseSucceeded))
	waitMemberConfigMap(t, 1, name, "web", 30*time.Second, "v=2 everywhere", hasValue("v", "2"))
	rev := &flv1.BundleRevision{}
	if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: ro.Spec.To}, rev); err != nil || rev.Spec.SourceRevision != "main@"+second {
		t.Errorf("revision %s source %q (%v), want main@%s", ro.Spec.To, rev.Spec.SourceRevision, err, second)
	}

	// A badly signed call is refused and fetches nothing.
	if code := f.hook(t, "wrong-token"); code != http.StatusForbidden {
		t.Errorf("badly signed webhook answered %d, want 403", code)
	}

	// A commit that renders the same content (only the README changes), found by interval:
	// the Bundle notes the commit, but no new revision and no rollout.
	third, err := f.work.Commit("main", "docs only", map[string]string{"README.md": "fleet, documented"}, false)
	if err != nil {
		t.Fatal(err)
	}
	f.waitCommit(t, 30*time.Second, third)
	b = waitBundle(t, ns, name, 30*time.Second, "the Bundle sees the new commit", func(b *flv1.Bundle) error {
		if b.Status.SourceRevision != "main@"+third {
			return fmt.Errorf("sourceRevision %s", b.Status.SourceRevision)
		}
		return nil
	})
	if b.Status.Revision != ro.Spec.To {
		t.Errorf("revision moved to %s on a commit that renders the same content", b.Status.Revision)
	}
	if n := rolloutCount(t, ns, name); n != firstRollouts+1 {
		t.Errorf("%d rollouts, want %d: the docs-only commit opened one", n, firstRollouts+1)
	}

	// A push nobody announces is found by the interval (10 s) and rolls out too.
	fourth, err := f.work.Commit("main", "v4", map[string]string{"apps/web/cm.yaml": cmYAML("web", "4")}, false)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	ro4 := waitRollout(t, ns, currentRolloutName(t, ns, name, 40*time.Second, "main@"+fourth), time.Minute, "the unannounced push rolls out", inPhase(flv1.PhaseSucceeded))
	t.Logf("interval: the unannounced push rolled out %s after it", time.Since(start).Round(100*time.Millisecond))
	waitMemberConfigMap(t, 0, name, "web", 30*time.Second, "v=4", hasValue("v", "4"))
	if ro4.Spec.ToSource != "main@"+fourth {
		t.Errorf("rollout %s moves to source %q", ro4.Name, ro4.Spec.ToSource)
	}

	// Which commit runs where: each Work, describe, and the rollout history say it.
	for _, c := range []string{c0, c1name} {
		if w := getWork(t, c, ns, name); w.Spec.SourceRevision != "main@"+fourth {
			t.Errorf("cluster %s runs source %q, want main@%s", c, w.Spec.SourceRevision, fourth)
		}
	}
	out := mustFlotilla(t, "describe", "bundle", name, "-n", ns)
	for _, want := range []string{"Source:      main@" + fourth, "main@" + fourth[:12]} {
		if !strings.Contains(out, want) {
			t.Errorf("describe bundle lacks %q:\n%s", want, out)
		}
	}
	out = mustFlotilla(t, "rollout", "history", name, "-n", ns)
	if want := fmt.Sprintf("(main@%s -> main@%s)", first[:12], second[:12]); !strings.Contains(out, want) {
		t.Errorf("rollout history lacks %q:\n%s", want, out)
	}
	t.Logf("flotilla rollout history:\n%s", out)
}

// currentRolloutName waits until the Bundle renders sourceRev and has a rollout to its
// revision, and returns the rollout's name.
func currentRolloutName(t *testing.T, ns, bundle string, timeout time.Duration, sourceRev string) string {
	t.Helper()
	var name string
	eventually(t, timeout, "a rollout for "+sourceRev, func() error {
		b := getBundle(t, ns, bundle)
		if b.Status.SourceRevision != sourceRev || b.Status.Rollout == nil || b.Status.Rollout.To != b.Status.Revision {
			return fmt.Errorf("source %s, revision %s, rollout %+v, conditions %s", b.Status.SourceRevision, b.Status.Revision, b.Status.Rollout, conditionsText(b.Status.Conditions))
		}
		name = b.Status.Rollout.Name
		return nil
	})
	return name
}

// TestGitFailuresKeepLastGoodRevision: a repository that goes down, a force-push, a broken
// Kustomize overlay and wrong credentials each set a clear condition, and every cluster keeps
// the last good revision. A Kustomize overlay with a component renders as Kustomize would.
func TestGitFailuresKeepLastGoodRevision(t *testing.T) {
	c0 := ensureJoined(t, 0)
	const ns, name = "team-git-fail", "site"
	f, first := newGitFixture(t, ns, "site", map[string]string{
		"base/kustomization.yaml":             "resources: [cm.yaml]\n",
		"base/cm.yaml":                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site}\ndata: {level: info, v: \"1\"}\n",
		"components/debug/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: site}\n    data: {level: debug}\n",
		"overlays/dev/kustomization.yaml":     "resources: [../../base]\ncomponents: [../../components/debug]\n",
	})
	gitBundle(t, ns, name, "site", "overlays/dev", []string{c0}, nil)
	good := waitBundle(t, ns, name, 90*time.Second, "the overlay everywhere", bundleReady(1)).Status.Revision
	waitMemberConfigMap(t, 0, name, "site", 30*time.Second, "the component applied", hasValue("level", "debug"))

	keeps := func(what string) {
		t.Helper()
		b := getBundle(t, ns, name)
		if b.Status.Revision != good || getWork(t, c0, ns, name).Spec.Revision != good {
			t.Errorf("%s: revision %s, want the last good %s", what, b.Status.Revision, good)
		}
		waitMemberConfigMap(t, 0, name, "site", time.Second, what+": the member keeps it", hasValue("v", "1"))
	}

	t.Run("repository down", func(t *testing.T) {
		f.srv.SetDown(true)
		defer f.srv.SetDown(false)
		f.hook(t, webhookToken)
		c := f.waitReady(t, 20*time.Second, metav1.ConditionFalse, flv1.ReasonFetchFailed)
		if !strings.Contains(c.Message, "Bundles keep using "+first[:12]) {
			t.Errorf("message %q", c.Message)
		}
		keeps("repository down")
	})
	f.hook(t, webhookToken)
	f.waitReady(t, 20*time.Second, metav1.ConditionTrue, flv1.ReasonFetched)

	t.Run("broken overlay", func(t *testing.T) {
		broken, err := f.work.Commit("main", "break it", map[string]string{"overlays/dev/kustomization.yaml": "resources: [../../nope]\n"}, false)
		if err != nil {
			t.Fatal(err)
		}
		f.hook(t, webhookToken)
		f.waitCommit(t, 20*time.Second, broken)
		b := waitBundle(t, ns, name, 30*time.Second, "Stalled by Kustomize", func(b *flv1.Bundle) error {
			c := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != flv1.ReasonKustomizeFailed {
				return fmt.Errorf("stalled %+v", c)
			}
			return nil
		})
		if c := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled); !strings.Contains(c.Message, broken[:12]) {
			t.Errorf("message %q does not name the commit", c.Message)
		}
		keeps("broken overlay")
		if err := f.work.ResetHard(1); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("force-push", func(t *testing.T) {
		rewritten, err := f.work.Commit("main", "rewritten history", map[string]string{"base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: site}\ndata: {level: info, v: \"2\"}\n"}, true)
		if err != nil {
			t.Fatal(err)
		}
		f.hook(t, webhookToken)
		c := f.waitReady(t, 20*time.Second, metav1.ConditionFalse, flv1.ReasonHistoryRewritten)
		t.Logf("force-push: %s", c.Message)
		keeps("force-push")
		// A person accepts the new history: the Bundle follows it.
		gr := f.get(t)
		patch := client.MergeFrom(gr.DeepCopy())
		gr.Annotations = map[string]string{source.AcceptCommitAnnotation: rewritten}
		if err := hubC.Patch(context.Background(), gr, patch); err != nil {
			t.Fatal(err)
		}
		f.waitCommit(t, 20*time.Second, rewritten)
		waitMemberConfigMap(t, 0, name, "site", 60*time.Second, "the accepted commit runs", hasValue("v", "2"))
	})

	t.Run("wrong credentials", func(t *testing.T) {
		s := &corev1.Secret{}
		if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "site-creds"}, s); err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte("wrong")
		if err := hubC.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		f.hook(t, webhookToken)
		c := f.waitReady(t, 20*time.Second, metav1.ConditionFalse, flv1.ReasonAuthFailed)
		if stalled := meta.FindStatusCondition(f.get(t).Status.Conditions, flv1.ConditionStalled); stalled == nil || stalled.Status != metav1.ConditionTrue {
			t.Errorf("Stalled %+v, want True: credentials need a person", stalled)
		}
		t.Logf("wrong credentials: %s", c.Message)
	})
}

// TestGitOverSSH: a GitRepository read over SSH with a private key and a pinned host key
// (known_hosts); a wrong host key is refused.
func TestGitOverSSH(t *testing.T) {
	const ns = "team-git-ssh"
	f, first := newGitFixture(t, ns, "sshrepo", map[string]string{"cm.yaml": cmYAML("x", "1")})
	sshSrv, err := testenv.StartGitSSHServer(f.srv.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sshSrv.Stop)
	ctx := context.Background()
	other, err := testenv.StartGitSSHServer(f.srv.Root) // another host key, for the refusal
	if err != nil {
		t.Fatal(err)
	}
	other.Stop()
	for name, knownHosts := range map[string][]byte{"ssh-good": sshSrv.KnownHosts, "ssh-wrong-host": []byte(knownhosts.Line([]string{knownhosts.Normalize(sshSrv.Addr)}, other.HostKey) + "\n")} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data: map[string][]byte{"identity": sshSrv.ClientKeyPEM, "known_hosts": knownHosts}}
		if err := hubC.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		gr := &flv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: flv1.GitRepositorySpec{
			URL: sshSrv.URL("sshrepo"), SecretRef: &flv1.LocalObjectReference{Name: name}}}
		if err := hubC.Create(ctx, gr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hubC.Delete(ctx, gr); _ = hubC.Delete(ctx, s) })
	}
	good := &gitFixture{ns: ns, repo: "ssh-good"}
	good.waitCommit(t, 30*time.Second, first)
	wrong := &gitFixture{ns: ns, repo: "ssh-wrong-host"}
	c := wrong.waitReady(t, 30*time.Second, metav1.ConditionFalse, flv1.ReasonAuthFailed)
	if !strings.Contains(c.Message, "key mismatch") {
		t.Errorf("wrong host key: %s", c.Message)
	}
	t.Logf("wrong host key: %s", c.Message)
}
