package content

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func configMap(name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "data": data,
	}}
}

func TestEncodeIsCanonical(t *testing.T) {
	a, b := configMap("a", map[string]any{"x": "1", "y": "2"}), configMap("b", map[string]any{"z": "3"})
	e1, err := Encode([]*unstructured.Unstructured{a, b})
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := Encode([]*unstructured.Unstructured{b, a})
	if e1.Hash != e2.Hash {
		t.Fatal("the same objects in another order hash differently")
	}
	e3, _ := Encode([]*unstructured.Unstructured{a, configMap("b", map[string]any{"z": "4"})})
	if e3.Hash == e1.Hash {
		t.Fatal("different content, same hash")
	}
	got, err := Decode(e1.Chunks, e1.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].GetName() != "a" || !reflect.DeepEqual(got[1].Object["data"], b.Object["data"]) {
		t.Fatalf("round trip: %v", got)
	}
}

// A 3 MB bundle of incompressible data needs several chunks, each below the bound, and
// comes back byte for byte.
func TestLargeContentIsChunked(t *testing.T) {
	var objs []*unstructured.Unstructured
	for i := range 3 {
		buf := make([]byte, 800<<10)
		_, _ = rand.Read(buf)
		objs = append(objs, configMap(fmt.Sprintf("blob-%d", i), map[string]any{"blob": base64.StdEncoding.EncodeToString(buf)}))
	}
	e, err := Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	if e.Size < 3<<20 || len(e.Chunks) < 3 {
		t.Fatalf("size %d in %d chunks", e.Size, len(e.Chunks))
	}
	for i, c := range e.Chunks {
		if len(c) > ChunkSize {
			t.Fatalf("chunk %d is %d bytes", i, len(c))
		}
	}
	got, err := Decode(e.Chunks, e.Hash)
	if err != nil {
		t.Fatal(err)
	}
	for i := range objs {
		if got[i].Object["data"].(map[string]any)["blob"] != objs[i].Object["data"].(map[string]any)["blob"] {
			t.Fatalf("object %d differs after the round trip", i)
		}
	}
	// A lost chunk is detected, not delivered.
	if _, err := Decode(e.Chunks[:len(e.Chunks)-1], e.Hash); err == nil {
		t.Fatal("decoded with a chunk missing")
	}
}

func TestDecodeRejectsWrongHash(t *testing.T) {
	e, _ := Encode([]*unstructured.Unstructured{configMap("a", nil)})
	other, _ := Encode([]*unstructured.Unstructured{configMap("b", nil)})
	if _, err := Decode(e.Chunks, other.Hash); err == nil || !strings.Contains(err.Error(), "corrupt or incomplete") {
		t.Fatalf("wrong hash: %v", err)
	}
}

func BenchmarkEncodeDecode1000Objects(b *testing.B) {
	var objs []*unstructured.Unstructured
	for i := range 1000 {
		objs = append(objs, configMap(fmt.Sprintf("cm-%d", i), map[string]any{"key": strings.Repeat("v", 200)}))
	}
	for b.Loop() {
		e, err := Encode(objs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Decode(e.Chunks, e.Hash); err != nil {
			b.Fatal(err)
		}
	}
}
