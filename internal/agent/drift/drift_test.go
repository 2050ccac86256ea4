package drift

import (
	"reflect"
	"testing"

	"flotilla.dev/flotilla/internal/render"
)

const desiredYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: web
        image: web:1
        resources: {requests: {cpu: 1000m, memory: 1Gi}}
      - name: proxy
        image: proxy:1
`

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		live   string
		ignore []string
		want   []Difference
	}{
		{"defaults and server fields are not drift", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, uid: x, resourceVersion: "9", labels: {app: web, extra: x}}
spec:
  replicas: 3
  strategy: {type: RollingUpdate}
  template:
    spec:
      dnsPolicy: ClusterFirst
      containers:
      - {name: web, image: "web:1", imagePullPolicy: IfNotPresent, resources: {requests: {cpu: "1", memory: 1Gi}}}
      - {name: proxy, image: "proxy:1"}
status: {replicas: 3}`, nil, nil},
		{"scaled by hand and image changed", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 7
  template:
    spec:
      containers:
      - {name: proxy, image: "proxy:1"}
      - {name: web, image: "web:hacked", resources: {requests: {cpu: "1", memory: 1Gi}}}`, nil,
			[]Difference{
				{Path: "/spec/replicas", Desired: "3", Live: "7"},
				{Path: "/spec/template/spec/containers/1/image", Desired: `"web:1"`, Live: `"web:hacked"`},
			}},
		{"removed label and removed container", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: web, image: "web:1", resources: {requests: {cpu: "1", memory: 1Gi}}}`, nil,
			[]Difference{
				{Path: "/metadata/labels", Desired: `{"app":"web"}`, Live: ""},
				{Path: "/spec/template/spec/containers/1", Desired: `{"image":"proxy:1","name":"proxy"}`, Live: ""},
			}},
		{"ignore rules", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 9
  template:
    spec:
      containers:
      - {name: web, image: "web:1", resources: {requests: {cpu: "2", memory: 1Gi}}}
      - {name: proxy, image: "proxy:1"}`, []string{"/spec/replicas", "/spec/template/spec/containers/0/resources/"},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := render.ParseYAML([]byte(desiredYAML))
			if err != nil {
				t.Fatal(err)
			}
			l, err := render.ParseYAML([]byte(tt.live))
			if err != nil {
				t.Fatal(err)
			}
			got := Diff(d[0], l[0], tt.ignore)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestEscapedKeys(t *testing.T) {
	d, _ := render.ParseYAML([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {example.com/owner: a}}\n"))
	l, _ := render.ParseYAML([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: {example.com/owner: b}}\n"))
	got := Diff(d[0], l[0], nil)
	if len(got) != 1 || got[0].Path != "/metadata/annotations/example.com~1owner" {
		t.Fatalf("got %+v", got)
	}
	if len(Diff(d[0], l[0], []string{"/metadata/annotations/example.com~1owner"})) != 0 {
		t.Fatal("escaped ignore rule not applied")
	}
}
