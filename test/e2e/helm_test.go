package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/testenv"
)

// serveChartRepo packages chart "web" at the given versions with the Helm SDK and serves them
// as an HTTP chart repository on loopback.
func serveChartRepo(t *testing.T, versions ...string) string {
	t.Helper()
	var charts []*chart.Chart
	for _, v := range versions {
		ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: v}}
		ch.Templates = []*common.File{
			{Name: "templates/deployment.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: "nginx:1.27"}]}
`)},
			{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-config}\ndata: {level: {{ .Values.level | quote }}, chart: {{ .Chart.Version | quote }}}\n")},
		}
		ch.Values = map[string]any{"replicas": 1, "level": "info"}
		ch.Raw = []*common.File{{Name: "values.yaml", Data: []byte("replicas: 1\nlevel: info\n")}}
		charts = append(charts, ch)
	}
	srv, err := testenv.ServeChartRepo(t.TempDir(), charts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHelmChartWithPerClusterValues: a chart from an HTTP chart repository, with values from
// the Bundle and a ConfigMap, and per-cluster values through an override (rendered once per
// distinct set of values); a version range that matches nothing stalls and keeps what runs.
func TestHelmChartWithPerClusterValues(t *testing.T) {
	ctx := context.Background()
	dev, prod := ensureJoined(t, 0), ensureJoined(t, 2)
	const ns, name = "team-helm", "shop"
	url := serveChartRepo(t, "1.0.0", "1.0.3", "2.0.0")
	ensureHubNamespace(t, ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-values", Namespace: ns}, Data: map[string]string{"values.yaml": "level: warn\n"}}
	if err := hubC.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hubC.Delete(ctx, cm) })
	b := &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: flv1.BundleSpec{
		TargetNamespace: name,
		Placement:       flv1.Placement{ClusterNames: []string{dev, prod}},
		Source: flv1.BundleSource{Helm: &flv1.HelmSource{Repository: url, Chart: "web", Version: "~1.0",
			ValuesFrom: []flv1.ValuesReference{{Kind: "ConfigMap", Name: "shop-values"}},
			Values:     jsonValue(t, map[string]any{"replicas": 2})}},
		Overrides: []flv1.OverrideRule{{Name: "prod-replicas",
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			HelmValues:      jsonValue(t, map[string]any{"replicas": 4})}},
	}}
	if err := hubC.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteBundle(t, ns, name) })
	b = waitBundle(t, ns, name, 90*time.Second, "the chart everywhere", bundleReady(2))
	if b.Status.SourceRevision != "web@1.0.3" || b.Status.Variants != 2 {
		t.Errorf("source %q, %d variants; want web@1.0.3 (the newest in ~1.0) and 2", b.Status.SourceRevision, b.Status.Variants)
	}
	for i, want := range map[int]int32{0: 2, 2: 4} {
		eventually(t, 30*time.Second, fmt.Sprintf("member %d runs %d replicas", i, want), func() error {
			d, err := memberClient(t, i).AppsV1().Deployments(name).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
				return fmt.Errorf("replicas %v", d.Spec.Replicas)
			}
			return nil
		})
		waitMemberConfigMap(t, i, name, name+"-config", 10*time.Second, "values from the ConfigMap", hasValue("level", "warn"))
	}
	good := b.Status.Revision

	updateBundle(t, ns, name, func(b *flv1.Bundle) { b.Spec.Source.Helm.Version = "~9" })
	b = waitBundle(t, ns, name, 30*time.Second, "Stalled by a range that matches nothing", func(b *flv1.Bundle) error {
		c := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != flv1.ReasonHelmFailed {
			return fmt.Errorf("stalled %+v", c)
		}
		return nil
	})
	if c := meta.FindStatusCondition(b.Status.Conditions, flv1.ConditionStalled); !strings.Contains(c.Message, "2.0.0, 1.0.3, 1.0.0") {
		t.Errorf("message %q does not list the versions", c.Message)
	}
	if b.Status.Revision != good || getWork(t, prod, ns, name).Spec.Revision != good {
		t.Errorf("revision moved from %s while stalled", good)
	}
}

// TestHelmChartFromGit: a chart directory in a Git repository, rendered at the fetched commit.
func TestHelmChartFromGit(t *testing.T) {
	dev := ensureJoined(t, 0)
	const ns, name = "team-helm-git", "api"
	_, commit := newGitFixture(t, ns, "charts", map[string]string{
		"charts/api/Chart.yaml":          "apiVersion: v2\nname: api\nversion: 0.3.0\n",
		"charts/api/values.yaml":         "level: info\n",
		"charts/api/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {level: {{ .Values.level | quote }}}\n",
		"charts/api/templates/NOTES.txt": "installed",
	})
	b := &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: flv1.BundleSpec{
		TargetNamespace: name, Placement: flv1.Placement{ClusterNames: []string{dev}},
		Source: flv1.BundleSource{Helm: &flv1.HelmSource{Git: &flv1.GitSource{Repository: flv1.LocalObjectReference{Name: "charts"}, Path: "charts/api"},
			ReleaseName: "api-release", Values: jsonValue(t, map[string]any{"level": "debug"})}},
	}}
	if err := hubC.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteBundle(t, ns, name) })
	b = waitBundle(t, ns, name, 90*time.Second, "the chart from Git", bundleReady(1))
	if b.Status.SourceRevision != "main@"+commit {
		t.Errorf("source %q, want main@%s", b.Status.SourceRevision, commit)
	}
	waitMemberConfigMap(t, 0, name, "api-release", 30*time.Second, "the chart's ConfigMap with the Bundle's values", hasValue("level", "debug"))
}
