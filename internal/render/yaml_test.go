package render

import (
	"strings"
	"testing"
)

func TestParseYAML(t *testing.T) {
	objs, err := ParseYAML([]byte("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {n: \"1\"}\n---\n---\n{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"b\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetName() != "a" || objs[1].GetKind() != "Secret" {
		t.Fatalf("got %v", objs)
	}
	for _, tt := range []struct{ in, want string }{
		{"apiVersion: v1\nkind: ConfigMap\n---\nkind: [unclosed\n", "document 2"},
		{"apiVersion: v1\nkind: ConfigMap\n---\nfoo: bar\n", "document 2: not a Kubernetes object"},
	} {
		if _, err := ParseYAML([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseYAML(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}
