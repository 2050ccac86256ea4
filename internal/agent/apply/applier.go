package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// FieldManager is the server-side-apply field manager of everything the agent applies.
const FieldManager = "flotilla"

// Ref names one applied object.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r Ref) String() string {
	k := r.Kind
	if r.Group != "" {
		k += "." + r.Group
	}
	if r.Namespace != "" {
		return k + " " + r.Namespace + "/" + r.Name
	}
	return k + " " + r.Name
}

// Result is the outcome for one object.
type Result struct {
	Ref
	Err error
	// Health by kstatus: Current, InProgress, Failed, ... (set by Health).
	Health  status.Status
	Message string
}

// Options of one apply.
type Options struct {
	// DefaultNamespace is used for namespaced objects that name none (Bundle targetNamespace).
	DefaultNamespace string
	// Takeover forces ownership of fields another manager owns; without it such a conflict
	// is an error for that object only.
	Takeover bool
	// Force takes ownership for these objects only: the agent restoring objects it applied
	// before, whose fields someone else has since written.
	Force map[Ref]bool
}

// Applier applies to one member cluster.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// New builds an applier for the member behind cfg.
func New(cfg *rest.Config) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// RefOf returns the reference of an object, with the namespace it will get.
func (a *Applier) RefOf(o *unstructured.Unstructured, defaultNamespace string) (Ref, *meta.RESTMapping, error) {
	gvk := o.GroupVersionKind()
	ref := Ref{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: o.GetName()}
	if ref.Kind == "" || ref.Version == "" {
		return ref, nil, fmt.Errorf("object %q has no apiVersion or kind", o.GetName())
	}
	if ref.Name == "" {
		return ref, nil, fmt.Errorf("%s without metadata.name", ref.Kind)
	}
	m, err := a.mapping(gvk)
	if err != nil {
		return ref, nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ref.Namespace = o.GetNamespace()
		if ref.Namespace == "" {
			ref.Namespace = defaultNamespace
		}
		if ref.Namespace == "" {
			return ref, nil, fmt.Errorf("%s is namespaced but names no namespace, and the bundle sets no targetNamespace", ref)
		}
	}
	return ref, m, nil
}

func (a *Applier) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset() // a CRD applied a moment ago
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("the member does not serve %s: is its CustomResourceDefinition in the bundle or installed?", gvk)
	}
	return m, err
}

// Apply applies objs in Sort order and returns a result per object, in that order. A failed
// object does not stop the others.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, o Options) []Result {
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	Sort(sorted)
	results := make([]Result, 0, len(sorted))
	ensured := map[string]bool{}
	for _, obj := range sorted {
		ref, m, err := a.RefOf(obj, o.DefaultNamespace)
		r := Result{Ref: ref, Err: err}
		if err == nil {
			r.Err = a.applyOne(ctx, obj.DeepCopy(), ref, m, o, ensured)
		}
		results = append(results, r)
	}
	return results
}

func (a *Applier) applyOne(ctx context.Context, obj *unstructured.Unstructured, ref Ref, m *meta.RESTMapping, o Options, ensured map[string]bool) error {
	res := a.dyn.Resource(m.Resource)
	var ri dynamic.ResourceInterface = res
	if ref.Namespace != "" {
		if err := a.ensureNamespace(ctx, ref.Namespace, ensured); err != nil {
			return err
		}
		obj.SetNamespace(ref.Namespace)
		ri = res.Namespace(ref.Namespace)
	}
	_, err := ri.Apply(ctx, ref.Name, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: o.Takeover || o.Force[ref]})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("conflict: another field manager owns fields this bundle sets (%v); set the bundle's takeover option to take them over", err)
	}
	if err != nil {
		return err
	}
	if ref.Group == "apiextensions.k8s.io" && ref.Kind == "CustomResourceDefinition" {
		return a.waitEstablished(ctx, ri, ref.Name)
	}
	if ref.Group == "" && ref.Kind == "Namespace" {
		ensured[ref.Name] = true
	}
	return nil
}

var namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// ensureNamespace creates a missing namespace, so a bundle need not ship its own.
func (a *Applier) ensureNamespace(ctx context.Context, ns string, ensured map[string]bool) error {
	if ensured[ns] {
		return nil
	}
	nsi := a.dyn.Resource(namespaceGVR)
	if _, err := nsi.Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns)
		if _, err := nsi.Apply(ctx, ns, u, metav1.ApplyOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	} else if err != nil {
		return err
	}
	ensured[ns] = true
	return nil
}

func (a *Applier) waitEstablished(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if cm, ok := c.(map[string]any); ok && cm["type"] == "Established" && cm["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s not established within 30s", name)
	}
	a.mapper.Reset()
	return nil
}

// Get reads the live object of ref (nil when it does not exist).
func (a *Applier) Get(ctx context.Context, ref Ref, m *meta.RESTMapping) (*unstructured.Unstructured, error) {
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if ref.Namespace != "" {
		ri = a.dyn.Resource(m.Resource).Namespace(ref.Namespace)
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// Dynamic is the applier's dynamic client (for watches of what it applied).
func (a *Applier) Dynamic() dynamic.Interface { return a.dyn }

// Health computes kstatus for each reference from the live object.
func (a *Applier) Health(ctx context.Context, refs []Ref) []Result {
	out := make([]Result, len(refs))
	for i, ref := range refs {
		out[i].Ref = ref
		m, err := a.mapping(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
		if err != nil {
			out[i].Err = err
			continue
		}
		var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		if ref.Namespace != "" {
			ri = a.dyn.Resource(m.Resource).Namespace(ref.Namespace)
		}
		live, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			out[i].Err = err
			continue
		}
		res, err := status.Compute(live)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Health, out[i].Message = res.Status, res.Message
	}
	return out
}

// Prune deletes the objects of previous that current no longer has, in reverse apply
// order. Objects already gone are fine.
func (a *Applier) Prune(ctx context.Context, previous, current []Ref) []Result {
	keep := map[Ref]bool{}
	for _, r := range current {
		keep[r] = true
	}
	var gone []Ref
	for _, r := range previous {
		if !keep[r] {
			gone = append(gone, r)
		}
	}
	sort.SliceStable(gone, func(i, j int) bool { return refPhase(gone[i]) > refPhase(gone[j]) })
	out := make([]Result, 0, len(gone))
	bg := metav1.DeletePropagationBackground
	for _, ref := range gone {
		r := Result{Ref: ref}
		m, err := a.mapping(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
		if err == nil {
			var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
			if ref.Namespace != "" {
				ri = a.dyn.Resource(m.Resource).Namespace(ref.Namespace)
			}
			err = ri.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		} else if strings.Contains(err.Error(), "does not serve") {
			err = nil // its CRD went first: the object went with it
		}
		r.Err = err
		out = append(out, r)
	}
	return out
}

func refPhase(r Ref) int {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind})
	return phase(u)
}
