package helmsource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"flotilla.dev/flotilla/internal/testenv"
)

var templates = map[string]string{
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}, labels: {chart: {{ .Chart.Name }}}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: "nginx:{{ .Values.tag }}"}]}
`,
	"templates/_helpers.tpl": `{{- define "x" }}x{{ end }}`,
	"templates/NOTES.txt":    "thanks",
	"templates/cm.yaml":      "{{- if .Values.config }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-config}\ndata: {level: {{ .Values.config.level | quote }}}\n{{- end }}\n",
	"crds/widget.yaml":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced, versions: []}\n",
}

const defaultValues = "replicas: 1\ntag: \"1.27\"\nconfig: {level: info}\n"

func testChart(version string) *chart.Chart {
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: version}}
	for name, data := range templates {
		f := &common.File{Name: name, Data: []byte(data)}
		if strings.HasPrefix(name, "crds/") {
			ch.Files = append(ch.Files, f)
		} else {
			ch.Templates = append(ch.Templates, f)
		}
	}
	ch.Values = map[string]any{"replicas": 1, "tag": "1.27", "config": map[string]any{"level": "info"}}
	ch.Raw = append(ch.Raw, &common.File{Name: "values.yaml", Data: []byte(defaultValues)})
	return ch
}

// TestFetchAndRender: charts packaged with the Helm SDK, served as a real HTTP chart
// repository on loopback; versions and ranges resolve, digests are checked, values apply.
func TestFetchAndRender(t *testing.T) {
	dir := t.TempDir()
	srv, err := testenv.ServeChartRepo(dir, testChart("1.0.0"), testChart("1.1.0"), testChart("2.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()

	for _, tc := range []struct{ version, want string }{{"~1.0", "1.0.0"}, {"^1", "1.1.0"}, {"", "2.0.0"}, {"2.0.0", "2.0.0"}} {
		c, err := Fetch(ctx, srv.Client(), srv.URL, "web", tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if c.Version != tc.want {
			t.Errorf("version %q resolved to %s, want %s", tc.version, c.Version, tc.want)
		}
	}
	if _, err := Fetch(ctx, srv.Client(), srv.URL, "web", ">=3"); err == nil || !strings.Contains(err.Error(), "available: 2.0.0, 1.1.0, 1.0.0") {
		t.Errorf("missing version: %v", err)
	}
	if _, err := Fetch(ctx, srv.Client(), srv.URL, "api", ""); err == nil || !strings.Contains(err.Error(), "no such chart") {
		t.Errorf("missing chart: %v", err)
	}

	c, err := Fetch(ctx, srv.Client(), srv.URL, "web", "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(c.Archive, "shop", "team", map[string]any{"replicas": 3, "config": map[string]any{"level": "debug"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	if strings.Join(got, " ") != "CustomResourceDefinition/widgets.example.com ConfigMap/shop-config Deployment/shop" {
		t.Errorf("objects %v", got)
	}
	dep := objs[2].Object["spec"].(map[string]any)
	if dep["replicas"] != int64(3) {
		t.Errorf("replicas %v: values not applied", dep["replicas"])
	}
	if l := objs[1].Object["data"].(map[string]any)["level"]; l != "debug" {
		t.Errorf("level %v", l)
	}

	// A chart that is not what the index says is refused.
	other, err := os.ReadFile(filepath.Join(dir, "web-1.1.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web-1.0.0.tgz"), other, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, srv.Client(), srv.URL, "web", "1.0.0"); err == nil || !strings.Contains(err.Error(), "does not match the index") {
		t.Errorf("tampered chart: %v", err)
	}

	// The same chart as a directory in Git.
	files := map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"), "values.yaml": []byte(defaultValues)}
	for n, d := range templates {
		files[n] = []byte(d)
	}
	objs, err = RenderFiles(files, "site", "team", map[string]any{"config": nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[1].GetName() != "site" {
		t.Errorf("from files: %d objects", len(objs))
	}
	if _, err := RenderFiles(map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: bad\nversion: 0.1.0\n"),
		"templates/x.yaml": []byte("{{ .Values.nope.deeper }}")}, "r", "n", nil); err == nil || !strings.Contains(err.Error(), "chart bad") {
		t.Errorf("a template error: %v", err)
	}
}
