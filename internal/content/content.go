// Package content encodes a rendered set of Kubernetes objects for storage in the hub's API:
// canonical (the same objects in any order give the same bytes), content-addressed (the hash
// names the revision), compressed, and split into chunks that each fit well below etcd's
// 1.5 MB object limit. Decode verifies the hash, so a missing or corrupt chunk is an error,
// never silently different content.
package content

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ChunkSize bounds the compressed bytes per chunk. Stored as base64 in JSON a chunk grows by
// a third, to 1.2 MB: room for the object around it under the 1.5 MB limit.
const ChunkSize = 900 << 10

// MaxSize bounds the uncompressed content of one revision: more is almost certainly a
// mistake (a binary committed by accident), and the agent holds it in memory.
const MaxSize = 64 << 20

// Encoded is one revision's content.
type Encoded struct {
	// Hash is the hex SHA-256 of the canonical uncompressed content.
	Hash string
	// Chunks of the gzip-compressed content, in order.
	Chunks [][]byte
	// Size of the uncompressed content in bytes, and the object count.
	Size, Objects int
}

// Encode canonicalises, hashes, compresses and splits objs.
func Encode(objs []*unstructured.Unstructured) (*Encoded, error) {
	sorted := make([]*unstructured.Unstructured, len(objs))
	copy(sorted, objs)
	sort.SliceStable(sorted, func(i, j int) bool { return sortKey(sorted[i]) < sortKey(sorted[j]) })
	items := make([]map[string]any, len(sorted))
	for i, o := range sorted {
		items[i] = o.Object
	}
	// encoding/json writes map keys sorted, which makes the bytes canonical.
	raw, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("encode content: %w", err)
	}
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("content is %d MiB, more than the %d MiB a revision may hold", len(raw)>>20, MaxSize>>20)
	}
	sum := sha256.Sum256(raw)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	e := &Encoded{Hash: hex.EncodeToString(sum[:]), Size: len(raw), Objects: len(objs)}
	for b := buf.Bytes(); len(b) > 0; {
		n := min(len(b), ChunkSize)
		e.Chunks = append(e.Chunks, b[:n:n])
		b = b[n:]
	}
	return e, nil
}

// Decode joins, decompresses and verifies chunks against hash.
func Decode(chunks [][]byte, hash string) ([]*unstructured.Unstructured, error) {
	zr, err := gzip.NewReader(bytes.NewReader(bytes.Join(chunks, nil)))
	if err != nil {
		return nil, fmt.Errorf("content %s: %w", short(hash), err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("content %s: %w", short(hash), err)
	}
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("content %s: larger than %d MiB", short(hash), MaxSize>>20)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != hash {
		return nil, fmt.Errorf("content %s is corrupt or incomplete: its bytes hash to %s", short(hash), short(got))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("content %s: %w", short(hash), err)
	}
	out := make([]*unstructured.Unstructured, len(items))
	for i, m := range items {
		// Unstructured's decoder keeps integers as int64, as the API machinery expects.
		out[i] = &unstructured.Unstructured{}
		if err := out[i].UnmarshalJSON(m); err != nil {
			return nil, fmt.Errorf("content %s object %d: %w", short(hash), i, err)
		}
	}
	return out, nil
}

func sortKey(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return gvk.Group + "\x00" + gvk.Kind + "\x00" + o.GetNamespace() + "\x00" + o.GetName()
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
