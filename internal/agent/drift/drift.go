// Package drift finds where a live object departs from what the agent applied. Only fields
// the desired object sets are compared: fields the API server defaults, or that other
// controllers own, are not drift. Quantities compare by value ("1000m" equals "1"), lists of
// named items (containers, env, ports with names) match by name, and ignore rules (RFC 6901
// JSON pointers) exclude known noisy fields.
package drift

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Difference is one drifted field.
type Difference struct {
	// Path is a JSON pointer into the object, e.g. /spec/replicas or
	// /spec/template/spec/containers/0/image.
	Path string
	// Desired and Live are JSON renderings of the values ("" for an absent live field).
	Desired, Live string
}

// Diff lists the fields of desired whose live value differs, sorted by path. ignore holds
// JSON pointers; a field at or below one of them is never drift.
func Diff(desired, live *unstructured.Unstructured, ignore []string) []Difference {
	d := &differ{ignore: ignore}
	d.walk("", stripMeta(desired.Object), live.Object)
	sort.Slice(d.out, func(i, j int) bool { return d.out[i].Path < d.out[j].Path })
	return d.out
}

// stripMeta drops what an apply may set but the server owns or rewrites.
func stripMeta(o map[string]any) map[string]any {
	c := make(map[string]any, len(o))
	for k, v := range o {
		if k == "status" {
			continue
		}
		c[k] = v
	}
	if m, ok := o["metadata"].(map[string]any); ok {
		mc := map[string]any{}
		for _, k := range []string{"labels", "annotations"} {
			if v, ok := m[k]; ok {
				mc[k] = v
			}
		}
		c["metadata"] = mc
	}
	return c
}

type differ struct {
	ignore []string
	out    []Difference
}

func (d *differ) ignored(path string) bool {
	for _, p := range d.ignore {
		if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

func (d *differ) add(path string, desired, live any, liveSet bool) {
	l := ""
	if liveSet {
		l = jsonText(live)
	}
	d.out = append(d.out, Difference{Path: path, Desired: jsonText(desired), Live: l})
}

func (d *differ) walk(path string, desired, live any) {
	if d.ignored(path) {
		return
	}
	switch dv := desired.(type) {
	case map[string]any:
		lv, ok := live.(map[string]any)
		if !ok {
			d.add(path, desired, live, live != nil)
			return
		}
		for k, v := range dv {
			p := path + "/" + escape(k)
			lval, present := lv[k]
			if !present {
				if !d.ignored(p) && !isEmpty(v) {
					d.add(p, v, nil, false)
				}
				continue
			}
			d.walk(p, v, lval)
		}
	case []any:
		ll, ok := live.([]any)
		if !ok {
			d.add(path, desired, live, live != nil)
			return
		}
		if _, ok := named(dv); ok {
			liveByName, _ := named(ll)
			for i, item := range dv {
				name := item.(map[string]any)["name"].(string)
				if li, found := liveByName[name]; found {
					d.walk(path+"/"+strconv.Itoa(li.index), item, li.value)
				} else {
					d.add(path+"/"+strconv.Itoa(i), item, nil, false)
				}
			}
			return
		}
		if len(dv) != len(ll) {
			d.add(path, desired, live, true)
			return
		}
		for i := range dv {
			d.walk(path+"/"+strconv.Itoa(i), dv[i], ll[i])
		}
	default:
		if !equalScalar(desired, live) {
			d.add(path, desired, live, true)
		}
	}
}

type indexed struct {
	index int
	value any
}

// named reports whether every item is an object with a string "name", and indexes them.
func named(items []any) (map[string]indexed, bool) {
	if len(items) == 0 {
		return nil, false
	}
	m := make(map[string]indexed, len(items))
	for i, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			return nil, false
		}
		n, ok := o["name"].(string)
		if !ok {
			return nil, false
		}
		m[n] = indexed{i, it}
	}
	return m, true
}

func equalScalar(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	if fa, ok := number(a); ok {
		if fb, ok := number(b); ok {
			return fa == fb
		}
	}
	sa, okA := a.(string)
	sb, okB := b.(string)
	if okA && okB {
		qa, errA := resource.ParseQuantity(sa)
		qb, errB := resource.ParseQuantity(sb)
		return errA == nil && errB == nil && qa.Cmp(qb) == 0
	}
	return false
}

func number(x any) (float64, bool) {
	switch n := x.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func escape(k string) string { return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1") }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
