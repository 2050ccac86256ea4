package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ParseYAML reads a multi-document YAML (or JSON) stream into objects. Empty documents are
// skipped; a document that is not an object with apiVersion and kind is an error naming its
// position, so a bad file never yields a partial set.
func ParseYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("document %d: not a Kubernetes object: %w", doc, err)
		}
		if string(bytes.TrimSpace(raw)) == "null" || string(bytes.TrimSpace(raw)) == "{}" {
			continue // an empty document
		}
		if head.APIVersion == "" || head.Kind == "" {
			return nil, fmt.Errorf("document %d: not a Kubernetes object (no apiVersion or kind)", doc)
		}
		// Unstructured's own decoder keeps integers as int64, as the API machinery expects.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, u)
	}
}
