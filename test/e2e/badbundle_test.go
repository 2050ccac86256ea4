package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// TestReleaseThatNeverBecomesReadyFails: pods that can never be scheduled make the
// Deployment miss its progress deadline: the Work says Available=False with the reason and
// the Bundle counts the cluster as failed.
func TestReleaseThatNeverBecomesReadyFails(t *testing.T) {
	c := ensureJoined(t, 1)
	dep := deployment("stuck", 1, "nginx:1.27")
	dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["nodeSelector"] = map[string]any{"no-such-node": "true"}
	createBundle(t, "team-fail", "stuck", []string{c}, nil, dep)
	b := waitBundle(t, "team-fail", "stuck", 90*time.Second, "the bundle counts a failed cluster", func(b *flv1.Bundle) error {
		if b.Status.Failed != 1 {
			return fmt.Errorf("failed = %d", b.Status.Failed)
		}
		return nil
	})
	w := getWork(t, c, "team-fail", "stuck")
	av := workCondition(w, flv1.ConditionAvailable)
	if av == nil || av.Status != "False" || av.Reason != flv1.ReasonResourcesFailed || !strings.Contains(av.Message, "Deployment") {
		t.Errorf("Available = %+v, want False/%s naming the Deployment", av, flv1.ReasonResourcesFailed)
	}
	ready := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionReady)
	if ready == nil || ready.Reason != flv1.ReasonFailing || !strings.Contains(ready.Message, c) {
		t.Errorf("bundle Ready = %+v, want Failing naming %s", ready, c)
	}
	t.Logf("Available: %s", av.Message)
}

// TestInvalidBundlesAreClearAndSendNothing: each kind of bad input gives a condition that
// says what is wrong, and nothing of the bad revision reaches a member.
func TestInvalidBundlesAreClearAndSendNothing(t *testing.T) {
	ctx := context.Background()
	c := ensureJoined(t, 2)
	cs := memberClient(t, 2)

	t.Run("unknown kind: the agent applies nothing", func(t *testing.T) {
		createBundle(t, "team-bad", "unknown-kind", []string{c}, nil,
			configMapObj("before-widget", map[string]any{"a": "b"}),
			map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}})
		waitWork(t, c, "team-bad", "unknown-kind", 30*time.Second, "Applied=False", func(w *flv1.Work) error {
			a := workCondition(w, flv1.ConditionApplied)
			if a == nil || a.Status != "False" || !strings.Contains(a.Message, "Widget") || !strings.Contains(a.Message, "nothing was applied") {
				return fmt.Errorf("applied: %+v", a)
			}
			return nil
		})
		waitMemberConfigMap(t, 2, "unknown-kind", "before-widget", time.Second, "no partial apply", absent)
	})

	t.Run("a patch aimed at nothing stalls and keeps the last good revision", func(t *testing.T) {
		createBundle(t, "team-bad", "typo", []string{c}, nil, configMapObj("cfg", map[string]any{"v": "1"}))
		good := waitBundle(t, "team-bad", "typo", 60*time.Second, "typo ready", bundleReady(1)).Status.Revision
		updateBundle(t, "team-bad", "typo", func(b *flv1.Bundle) {
			b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("cfg", map[string]any{"v": "2"}))
			b.Spec.Overrides = []flv1.OverrideRule{{Name: "fix-name", Target: &flv1.ResourceSelector{Kind: "ConfigMap", Name: "cgf"},
				JSONPatch: []flv1.JSONPatchOperation{{Op: "add", Path: "/data/x", Value: jsonValue(t, "y")}}}}
		})
		b := waitBundle(t, "team-bad", "typo", 30*time.Second, "Stalled", func(b *flv1.Bundle) error {
			if !meta.IsStatusConditionTrue(b.Status.Conditions, flv1.ConditionStalled) {
				return fmt.Errorf("not stalled")
			}
			return nil
		})
		s := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled)
		if s.Reason != flv1.ReasonOverrideFailed || !strings.Contains(s.Message, `"fix-name"`) || !strings.Contains(s.Message, c) {
			t.Errorf("Stalled = %s: %s; want the rule and the cluster named", s.Reason, s.Message)
		}
		if b.Status.Revision != good {
			t.Errorf("revision moved to %s while stalled, want %s", b.Status.Revision, good)
		}
		waitMemberConfigMap(t, 2, "typo", "cfg", time.Second, "the member keeps the last good content", hasValue("v", "1"))
	})

	t.Run("missing name and bad YAML in a ConfigMap source stall", func(t *testing.T) {
		createBundle(t, "team-bad", "noname", []string{c}, nil, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{}, "data": map[string]any{}})
		waitBundle(t, "team-bad", "noname", 30*time.Second, "Stalled for a missing name", stalledWith(flv1.ReasonInvalidResource, "no metadata.name"))

		src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "badyaml-src", Namespace: "team-bad"},
			Data: map[string]string{"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n"}}
		if err := hubC.Create(ctx, src); err != nil {
			t.Fatal(err)
		}
		defer hubC.Delete(ctx, src)
		createBundle(t, "team-bad", "badyaml", []string{c}, func(b *flv1.Bundle) {
			b.Spec.Source.Inline = &flv1.InlineSource{ConfigMaps: []flv1.LocalObjectReference{{Name: "badyaml-src"}}}
		})
		waitBundle(t, "team-bad", "badyaml", 30*time.Second, "Stalled for bad YAML", stalledWith(flv1.ReasonInvalidSource, "badyaml-src key app.yaml"))
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "badyaml", metav1.GetOptions{}); err == nil {
			t.Error("a stalled bundle created its namespace on the member")
		}
		// Fixing the ConfigMap is enough: its change reaches the Bundle.
		src.Data["app.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fixed}\ndata: {ok: \"yes\"}\n"
		if err := hubC.Update(ctx, src); err != nil {
			t.Fatal(err)
		}
		waitMemberConfigMap(t, 2, "badyaml", "fixed", 30*time.Second, "the fixed source is delivered", hasValue("ok", "yes"))
	})

	t.Run("flotilla apply refuses bad YAML and unknown fields", func(t *testing.T) {
		dir := t.TempDir()
		bad := filepath.Join(dir, "bad.yaml")
		os.WriteFile(bad, []byte("apiVersion: flotilla.dev/v1alpha1\nkind: Bundle\nmetadata: {name: cli-bad, namespace: team-bad\n"), 0o644)
		if out, err := flotilla(t, "apply", "-f", bad); err == nil || !strings.Contains(out, "nothing was applied") {
			t.Errorf("bad YAML: err %v, out %s", err, out)
		}
		unknown := filepath.Join(dir, "unknown.yaml")
		os.WriteFile(unknown, []byte(`apiVersion: flotilla.dev/v1alpha1
kind: Bundle
metadata: {name: cli-unknown, namespace: team-bad}
spec:
  source: {inline: {resources: []}}
  placment: {clusterNames: [x]}
`), 0o644)
		out, err := flotilla(t, "apply", "-f", unknown)
		if err == nil || !strings.Contains(out, "placment") {
			t.Errorf("a misspelled field should be an error naming it: err %v, out %s", err, out)
		}
		if err := hubC.Get(ctx, client.ObjectKey{Namespace: "team-bad", Name: "cli-unknown"}, &flv1.Bundle{}); err == nil {
			t.Error("the Bundle with an unknown field was created")
		}
	})
}

func stalledWith(reason, msg string) func(*flv1.Bundle) error {
	return func(b *flv1.Bundle) error {
		s := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled)
		if s == nil || s.Status != "True" || s.Reason != reason || !strings.Contains(s.Message, msg) {
			return fmt.Errorf("stalled: %+v", s)
		}
		return nil
	}
}

// TestLargeBundleDeliveredIntact: 3 MB of incompressible data, from ConfigMap sources, is
// stored in chunks under the etcd limit and arrives on the member byte for byte.
func TestLargeBundleDeliveredIntact(t *testing.T) {
	ctx := context.Background()
	c := ensureJoined(t, 0)
	ensureHubNamespace(t, "team-big")
	var refs []flv1.LocalObjectReference
	want := map[string]string{}
	for i := range 4 {
		buf := make([]byte, 560<<10) // base64: ~750 KB per ConfigMap, 3 MB in all
		rand.Read(buf)
		val := base64.StdEncoding.EncodeToString(buf)
		name := fmt.Sprintf("blob-%d", i)
		sum := sha256.Sum256([]byte(val))
		want[name] = hex.EncodeToString(sum[:])
		src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big-src-" + name, Namespace: "team-big"},
			Data: map[string]string{"obj.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata:\n  blob: %s\n", name, val)}}
		if err := hubC.Create(ctx, src); err != nil {
			t.Fatal(err)
		}
		defer hubC.Delete(ctx, src)
		refs = append(refs, flv1.LocalObjectReference{Name: src.Name})
	}
	start := time.Now()
	createBundle(t, "team-big", "big", []string{c}, func(b *flv1.Bundle) {
		b.Spec.Source.Inline = &flv1.InlineSource{ConfigMaps: refs}
	})
	b := waitBundle(t, "team-big", "big", 120*time.Second, "big bundle delivered", bundleReady(1))
	t.Logf("3 MB bundle delivered and available %s after create", time.Since(start).Round(time.Millisecond))
	rev := &flv1.BundleRevision{}
	if err := hubC.Get(ctx, client.ObjectKey{Namespace: "team-big", Name: b.Status.Revision}, rev); err != nil {
		t.Fatal(err)
	}
	if n := len(rev.Spec.Base.Chunks); n < 3 {
		t.Errorf("content in %d chunks; 3 MB of incompressible data needs at least 3", n)
	}
	t.Logf("revision %s: %d bytes in %d chunks", rev.Name, rev.Spec.Base.Size, len(rev.Spec.Base.Chunks))
	for name, sum := range want {
		cm, err := memberClient(t, 0).CoreV1().ConfigMaps("big").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256([]byte(cm.Data["blob"]))
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s arrived changed", name)
		}
	}
}
