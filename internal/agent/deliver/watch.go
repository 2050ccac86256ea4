package deliver

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// Delivered objects carry this label (watches select on it) and an annotation naming
// their Work (events map back to it).
const (
	LabelDelivered = "flotilla.dev/delivered"
	AnnotationWork = "flotilla.dev/work"
)

// watcher holds one informer per kind the agent delivered, over delivered objects only, so
// a change by anyone reaches the agent within moments and live state is read from memory.
type watcher struct {
	factory dynamicinformer.DynamicSharedInformerFactory
	mu      sync.Mutex
	inf     map[schema.GroupVersionResource]cache.SharedIndexInformer
	notify  func(work string)
	stop    <-chan struct{}
}

func newWatcher(ctx context.Context, dyn dynamic.Interface, notify func(string)) *watcher {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = LabelDelivered })
	return &watcher{factory: f, inf: map[schema.GroupVersionResource]cache.SharedIndexInformer{}, notify: notify, stop: ctx.Done()}
}

// ensure starts watching gvr (once).
func (w *watcher) ensure(gvr schema.GroupVersionResource) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.inf[gvr]; ok {
		return
	}
	inf := w.factory.ForResource(gvr).Informer()
	handle := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if u, ok := o.(*unstructured.Unstructured); ok {
			if work := u.GetAnnotations()[AnnotationWork]; work != "" {
				w.notify(work)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: handle, DeleteFunc: handle,
		UpdateFunc: func(_, n any) { handle(n) }})
	w.inf[gvr] = inf
	w.factory.Start(w.stop)
}

// get returns the live object from the informer, and whether the informer could answer
// (false until it has synced: the caller then reads from the API server).
func (w *watcher) get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool) {
	w.mu.Lock()
	inf := w.inf[gvr]
	w.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	o, exists, err := inf.GetStore().GetByKey(key)
	if err != nil {
		return nil, false
	}
	if !exists {
		return nil, true
	}
	return o.(*unstructured.Unstructured), true
}
