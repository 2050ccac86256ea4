// Package deliver is the agent's delivery loop: it watches the Works in its cluster's hub
// namespace, fetches and verifies their content, applies it to the member, prunes what was
// dropped, reports health and drift into each Work's status, and corrects drift. Works and
// content are cached on the member, so all of this except status reporting goes on while
// the hub is unreachable, also across agent restarts.
package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent/apply"
	"flotilla.dev/flotilla/internal/agent/drift"
	"flotilla.dev/flotilla/internal/content"
	"flotilla.dev/flotilla/internal/render"
)

// FieldOwner is the agent's field manager for Work status on the hub.
const FieldOwner = "flotilla-agent"

// Resync is how often every Work is re-checked even without events (a backstop: watches
// deliver changes within moments).
const Resync = 5 * time.Minute

// Options configure the delivery loop.
type Options struct {
	Hub     *rest.Config
	Member  *rest.Config
	Cluster string
	// Namespace on the member for the cache and inventories.
	Namespace string
	Log       *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Deliverer runs the delivery loop.
type Deliverer struct {
	o        Options
	hubNS    string
	hub      client.Client
	hubCache ctrlcache.Cache
	synced   chan struct{} // closed once the hub's Works are listed
	applier  *apply.Applier
	inv      *apply.Inventory
	cache    *Cache
	watch    *watcher
	queue    workqueue.TypedRateLimitingInterface[string]
	log      *slog.Logger

	mu    sync.Mutex
	works map[string]*workState
}

// workState is what the agent holds for one Work.
type workState struct {
	work     *flv1.Work // desired, from the hub or the member cache
	hash     string     // content hash of objs
	objs     []*unstructured.Unstructured
	applied  string          // specKey of the Work last fully applied
	status   flv1.WorkStatus // last status computed
	reported bool            // status reached the hub
	cachedRV string          // resourceVersion of the Work last written to the member cache
}

// hubScheme and hubMapper know only Flotilla's kinds: the agent never needs discovery on
// the hub, so it starts (and works from its cache) while the hub is down.
func hubSchemeAndMapper() (*runtime.Scheme, meta.RESTMapper) {
	s := runtime.NewScheme()
	_ = flv1.AddToScheme(s)
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{flv1.GroupVersion})
	m.Add(flv1.GroupVersion.WithKind("Work"), meta.RESTScopeNamespace)
	m.Add(flv1.GroupVersion.WithKind("ContentChunk"), meta.RESTScopeNamespace)
	return s, m
}

// New builds the loop; Run starts it.
func New(o Options) (*Deliverer, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s, m := hubSchemeAndMapper()
	hub, err := client.New(o.Hub, client.Options{Scheme: s, Mapper: m})
	if err != nil {
		return nil, err
	}
	ns := flv1.ClusterNamespace(o.Cluster)
	hc, err := ctrlcache.New(o.Hub, ctrlcache.Options{Scheme: s, Mapper: m, DefaultNamespaces: map[string]ctrlcache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	a, err := apply.New(o.Member)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return nil, err
	}
	return &Deliverer{o: o, hubNS: ns, hub: hub, hubCache: hc, synced: make(chan struct{}), applier: a,
		inv:   &apply.Inventory{Client: cs, Namespace: o.Namespace},
		cache: &Cache{Client: cs, Namespace: o.Namespace},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, time.Minute)),
		log:   o.Log.With("loop", "delivery"), works: map[string]*workState{}}, nil
}

// Run delivers until ctx ends.
func (d *Deliverer) Run(ctx context.Context) error {
	d.watch = newWatcher(ctx, d.applier.Dynamic(), func(w string) { d.queue.AddAfter(w, 100*time.Millisecond) })
	go func() { <-ctx.Done(); d.queue.ShutDown() }()

	// The member cache first: delivery and drift correction do not wait for the hub.
	cached, err := d.cache.Works(ctx)
	if err != nil {
		d.log.Error("reading the member cache failed; waiting for the hub", "error", err)
	}
	for _, w := range cached {
		d.works[w.Name] = &workState{work: w, cachedRV: w.ResourceVersion}
		d.queue.Add(w.Name)
	}
	if len(cached) > 0 {
		d.log.Info("loaded Works from the member cache", "works", len(cached))
	}

	inf, err := d.hubCache.GetInformer(ctx, &flv1.Work{}, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watch Works on the hub: %w", err)
	}
	enqueue := func(o any) {
		if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if w, ok := o.(client.Object); ok {
			d.queue.Add(w.GetName())
		}
	}
	if _, err := inf.AddEventHandler(handlerFuncs(enqueue)); err != nil {
		return err
	}
	go func() { _ = d.hubCache.Start(ctx) }()
	go func() {
		if d.hubCache.WaitForCacheSync(ctx) {
			close(d.synced)
			d.log.Info("Works listed from the hub")
			d.enqueueAll(ctx)
		}
	}()
	go func() {
		t := time.NewTicker(Resync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				d.enqueueAll(ctx)
			}
		}
	}()
	for d.next(ctx) {
	}
	return nil
}

// enqueueAll queues every Work known from the hub, the cache, and every inventory (a Work
// deleted while the agent was down still has its objects removed).
func (d *Deliverer) enqueueAll(ctx context.Context) {
	d.mu.Lock()
	for n := range d.works {
		d.queue.Add(n)
	}
	d.mu.Unlock()
	list := &flv1.WorkList{}
	if err := d.hubCache.List(ctx, list); err == nil {
		for i := range list.Items {
			d.queue.Add(list.Items[i].Name)
		}
	}
	names, err := d.inv.Works(ctx)
	if err != nil {
		d.log.Warn("listing inventories failed", "error", err)
	}
	for _, n := range names {
		d.queue.Add(n)
	}
}

func (d *Deliverer) next(ctx context.Context) bool {
	name, quit := d.queue.Get()
	if quit {
		return false
	}
	defer d.queue.Done(name)
	after, err := d.process(ctx, name)
	switch {
	case err != nil:
		d.log.Warn("delivery pass failed, retrying", "work", name, "error", err)
		d.queue.AddRateLimited(name)
	default:
		d.queue.Forget(name)
		if after > 0 {
			d.queue.AddAfter(name, after)
		}
	}
	return true
}

func (d *Deliverer) hubSynced() bool {
	select {
	case <-d.synced:
		return true
	default:
		return false
	}
}

// process is one pass over one Work: what should run, then apply, prune, health, drift,
// status. It returns when to look again.
func (d *Deliverer) process(ctx context.Context, name string) (time.Duration, error) {
	d.mu.Lock()
	st := d.works[name]
	d.mu.Unlock()

	if d.hubSynced() {
		w := &flv1.Work{}
		err := d.hubCache.Get(ctx, types.NamespacedName{Namespace: d.hubNS, Name: name}, w)
		switch {
		case apierrors.IsNotFound(err):
			return 0, d.remove(ctx, name, st)
		case err != nil:
			return 0, err
		case st == nil:
			st = &workState{work: w}
			d.mu.Lock()
			d.works[name] = st
			d.mu.Unlock()
		case st.work.ResourceVersion != w.ResourceVersion:
			st.work = w
		}
	}
	if st == nil {
		return 0, nil // only an inventory, and the hub not listed yet: decide once it is
	}
	w := st.work
	now := d.o.Now()

	o := outcome{mode: w.Spec.Apply.Drift, drift: map[apply.Ref][]drift.Difference{}}
	if o.mode == "" {
		o.mode = flv1.DriftCorrect
	}
	var requeue time.Duration
	if bg := w.Spec.BreakGlass; bg != nil && now.Before(bg.Until.Time) {
		o.breakGlass = bg
		requeue = bg.Until.Sub(now) + 100*time.Millisecond // correction resumes by itself
	}

	if err := d.ensureContent(ctx, st); err != nil {
		o.blockedReason, o.blockedMessage = flv1.ReasonContentFailed, err.Error()
		return 10 * time.Second, d.report(ctx, st, o, now)
	}
	if err := d.cacheWork(ctx, st); err != nil {
		d.log.Warn("caching the Work on the member failed", "work", name, "error", err)
	}
	desired, err := d.desired(st)
	if err != nil {
		o.blockedReason, o.blockedMessage = flv1.ReasonVariablesFailed, err.Error()
		return 0, d.report(ctx, st, o, now)
	}
	refs, mappings, err := d.resolve(desired, w.Spec.TargetNamespace)
	if err != nil {
		o.blockedReason, o.blockedMessage = flv1.ReasonApplyFailed, err.Error()+"; nothing was applied"
		return 30 * time.Second, d.report(ctx, st, o, now)
	}
	previous, err := d.inv.Load(ctx, name)
	if err != nil {
		return 0, err
	}
	inPrevious := map[apply.Ref]bool{}
	for _, r := range previous {
		inPrevious[r] = true
	}

	// Drift: compare what runs with what should, from the watches' memory.
	correct := o.mode == flv1.DriftCorrect && o.breakGlass == nil
	// A full apply when what should run changed; a break-glass record alone changes nothing
	// that runs, so it must not re-apply over the hand edits it allows.
	key := specKey(w)
	full := st.applied != key
	var toApply []*unstructured.Unstructured
	force := map[apply.Ref]bool{}
	for i, obj := range desired {
		ref := refs[i]
		d.watch.ensure(mappings[i].Resource)
		if full {
			toApply = append(toApply, obj)
			force[ref] = inPrevious[ref] && correct
			continue
		}
		live, err := d.live(ctx, ref, mappings[i])
		if err != nil {
			return 0, err
		}
		var diffs []drift.Difference
		if live == nil {
			diffs = []drift.Difference{{Path: "", Desired: "(object)", Live: "(deleted)"}}
		} else {
			diffs = drift.Diff(obj, live, ignoresFor(w.Spec.Apply.IgnoreDifferences, ref))
		}
		if len(diffs) == 0 || o.mode == flv1.DriftIgnore {
			continue
		}
		if correct {
			toApply = append(toApply, obj)
			force[ref] = true
			o.corrected++
			d.log.Info("correcting drift", "work", name, "object", ref.String(), "fields", len(diffs))
		} else {
			o.drift[ref] = diffs
		}
	}
	if len(toApply) > 0 {
		o.results = d.applier.Apply(ctx, toApply, apply.Options{DefaultNamespace: w.Spec.TargetNamespace,
			Takeover: w.Spec.Apply.Takeover, Force: force})
	}
	applyFailed := false
	for _, r := range o.results {
		applyFailed = applyFailed || r.Err != nil
	}
	if full && !applyFailed {
		if err := d.inv.Save(ctx, name, refs); err != nil {
			return 0, err
		}
		if w.Spec.Apply.PruneEnabled() {
			for _, r := range d.applier.Prune(ctx, previous, refs) {
				if r.Err != nil {
					o.results = append(o.results, r)
					applyFailed = true
				}
			}
		}
		if !applyFailed {
			st.applied = key
		}
	} else if full {
		// Record what was applied too, so a later pass can prune it; keep the old entries
		// until a full success.
		if err := d.inv.Save(ctx, name, union(previous, refs)); err != nil {
			return 0, err
		}
	}

	// Health, from the watches (fresh after our own apply: read from the API server then).
	for i, ref := range refs {
		h := apply.Result{Ref: ref}
		var live *unstructured.Unstructured
		if len(toApply) > 0 {
			live, err = d.applier.Get(ctx, ref, mappings[i])
		} else {
			live, err = d.live(ctx, ref, mappings[i])
		}
		switch {
		case err != nil:
			h.Err = err
		case live == nil:
			h.Health, h.Message = kstatus.NotFoundStatus, "not found on the member"
		default:
			h.Health, h.Message = healthOf(live)
		}
		o.health = append(o.health, h)
		if h.Health != kstatus.CurrentStatus && requeue == 0 {
			requeue = 5 * time.Second // a backstop: the watch usually reports sooner
		}
	}
	if applyFailed && requeue == 0 {
		requeue = 30 * time.Second
	}
	return requeue, d.report(ctx, st, o, now)
}

// report writes the Work's status to the hub when it changed. A hub outage is not an error
// of the pass: the status is written once the hub answers again.
func (d *Deliverer) report(ctx context.Context, st *workState, o outcome, now time.Time) error {
	next := buildStatus(st.work, st.status, o, now)
	if st.reported && equality.Semantic.DeepEqual(next, st.status) {
		return nil
	}
	st.status, st.reported = next, false
	if !d.hubSynced() && !d.hubReachable(ctx) {
		return errHubDown
	}
	patch, err := StatusPatch(next)
	if err != nil {
		return err
	}
	w := &flv1.Work{ObjectMeta: metav1.ObjectMeta{Name: st.work.Name, Namespace: st.work.Namespace}}
	if err := d.hub.Status().Patch(ctx, w, patch, client.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // the Work was deleted meanwhile; its removal is the next pass
		}
		return fmt.Errorf("report status of %s to the hub: %w", st.work.Name, err)
	}
	st.reported = true
	return nil
}

var errHubDown = errors.New("hub not reachable: status will be reported when it is")

func (d *Deliverer) hubReachable(ctx context.Context) bool {
	w := &flv1.Work{}
	err := d.hub.Get(ctx, types.NamespacedName{Namespace: d.hubNS, Name: "-"}, w)
	return err == nil || apierrors.IsNotFound(err)
}

// StatusPatch is the agent's write of a Work's whole status: a JSON patch that sets /status,
// which the API server handles as a plain update (server-side apply costs it about a third
// more per write, and every fan-out writes one status per cluster). The agent is the only
// writer of a Work's status, so replacing it whole loses nothing, and it needs no
// resourceVersion. The bench's simulated agents write status with it too.
func StatusPatch(st flv1.WorkStatus) (client.Patch, error) {
	b, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": st}})
	if err != nil {
		return nil, err
	}
	return client.RawPatch(types.JSONPatchType, b), nil
}

// ensureContent makes st.objs the Work's content: from memory, the member cache, or the hub.
func (d *Deliverer) ensureContent(ctx context.Context, st *workState) error {
	ref := st.work.Spec.Content
	if st.hash == ref.Hash && st.objs != nil {
		return nil
	}
	chunks := make([][]byte, len(ref.Chunks))
	for i, name := range ref.Chunks {
		b, err := d.cache.Chunk(ctx, name)
		if err != nil {
			return fmt.Errorf("read cached content: %w", err)
		}
		if b == nil {
			c := &flv1.ContentChunk{}
			if err := d.hub.Get(ctx, types.NamespacedName{Namespace: flv1.ContentNamespace, Name: name}, c); err != nil {
				return fmt.Errorf("fetch content chunk %d of %d from the hub: %w", i+1, len(ref.Chunks), err)
			}
			b = c.Data
		}
		chunks[i] = b
	}
	objs, err := content.Decode(chunks, ref.Hash)
	if err != nil {
		return err
	}
	for i, name := range ref.Chunks {
		if err := d.cache.PutChunk(ctx, name, chunks[i]); err != nil {
			d.log.Warn("caching content on the member failed", "error", err)
		}
	}
	st.objs, st.hash = objs, ref.Hash
	return nil
}

// cacheWork records the Work on the member when it changed, and drops chunks no Work uses.
func (d *Deliverer) cacheWork(ctx context.Context, st *workState) error {
	if st.cachedRV == st.work.ResourceVersion {
		return nil
	}
	if err := d.cache.PutWork(ctx, st.work); err != nil {
		return err
	}
	st.cachedRV = st.work.ResourceVersion
	return d.pruneChunks(ctx)
}

func (d *Deliverer) pruneChunks(ctx context.Context) error {
	keep := map[string]bool{}
	d.mu.Lock()
	for _, s := range d.works {
		for _, c := range s.work.Spec.Content.Chunks {
			keep[chunkSecretName(c)] = true
		}
	}
	d.mu.Unlock()
	return d.cache.PruneChunks(ctx, keep)
}

// desired substitutes the cluster's variables into copies of the content and marks every
// object as delivered by this Work.
func (d *Deliverer) desired(st *workState) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(st.objs))
	for i, o := range st.objs {
		out[i] = o.DeepCopy()
	}
	v := st.work.Spec.Variables
	if err := render.Substitute(out, render.Vars{Name: v.ClusterName, Owner: v.Owner, Labels: v.Labels}); err != nil {
		return nil, err
	}
	for _, o := range out {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[LabelDelivered] = "true"
		o.SetLabels(l)
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[AnnotationWork] = st.work.Name
		o.SetAnnotations(a)
	}
	return out, nil
}

// resolve maps every object to its API on the member before anything is applied: one
// unknown kind or missing namespace stops the whole Work, so nothing is half-applied.
// Kinds whose CustomResourceDefinition is in the same content are exempt (it is applied first).
func (d *Deliverer) resolve(objs []*unstructured.Unstructured, defaultNS string) ([]apply.Ref, []*meta.RESTMapping, error) {
	own := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			own[schema.GroupKind{Group: g, Kind: k}] = true
		}
	}
	refs := make([]apply.Ref, len(objs))
	maps := make([]*meta.RESTMapping, len(objs))
	var errs []error
	for i, o := range objs {
		ref, m, err := d.applier.RefOf(o, defaultNS)
		if err != nil && own[o.GroupVersionKind().GroupKind()] {
			continue // resolved after its CRD is applied
		}
		if err != nil {
			errs = append(errs, err)
		}
		refs[i], maps[i] = ref, m
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	for i := range objs {
		if maps[i] == nil { // a kind of a CRD in this content: apply the CRDs, then resolve
			crds := []*unstructured.Unstructured{}
			for _, o := range objs {
				if o.GetKind() == "CustomResourceDefinition" {
					crds = append(crds, o)
				}
			}
			for _, r := range d.applier.Apply(context.Background(), crds, apply.Options{}) {
				if r.Err != nil {
					return nil, nil, r.Err
				}
			}
			return d.resolve(objs, defaultNS)
		}
	}
	return refs, maps, nil
}

func (d *Deliverer) live(ctx context.Context, ref apply.Ref, m *meta.RESTMapping) (*unstructured.Unstructured, error) {
	if u, ok := d.watch.get(m.Resource, ref.Namespace, ref.Name); ok {
		return u, nil
	}
	return d.applier.Get(ctx, ref, m)
}

// remove handles a Work the hub no longer has: its objects are deleted (or orphaned, as
// its deletion policy says), then the inventory and cache entries go.
func (d *Deliverer) remove(ctx context.Context, name string, st *workState) error {
	previous, err := d.inv.Load(ctx, name)
	if err != nil {
		return err
	}
	orphan := st != nil && st.work.Spec.Apply.DeletionPolicy == flv1.DeletionOrphan
	if len(previous) > 0 && !orphan {
		var errs []error
		for _, r := range d.applier.Prune(ctx, previous, nil) {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Ref, r.Err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("remove objects of %s: %w", name, err)
		}
		d.log.Info("removed the objects of a Work the hub no longer has", "work", name, "objects", len(previous))
	}
	if err := d.inv.Delete(ctx, name); err != nil {
		return err
	}
	if err := d.cache.DeleteWork(ctx, name); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.works, name)
	d.mu.Unlock()
	return d.pruneChunks(ctx)
}

// specKey identifies what a Work asks to run: its spec without the break-glass record.
func specKey(w *flv1.Work) string {
	spec := w.Spec
	// Neither a break-glass record nor the hub's rollout record and source revision change
	// what runs.
	spec.BreakGlass, spec.Rollout, spec.SourceRevision = nil, nil, ""
	b, _ := json.Marshal(spec)
	return string(b)
}

func ignoresFor(rules []flv1.IgnoreRule, ref apply.Ref) []string {
	var out []string
	for _, r := range rules {
		if r.Kind == ref.Kind && r.Group == ref.Group && (r.Namespace == "" || r.Namespace == ref.Namespace) && (r.Name == "" || r.Name == ref.Name) {
			out = append(out, r.JSONPointers...)
		}
	}
	return out
}

func union(a, b []apply.Ref) []apply.Ref {
	seen := map[apply.Ref]bool{}
	var out []apply.Ref
	for _, r := range append(append([]apply.Ref{}, a...), b...) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

func handlerFuncs(f func(any)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{AddFunc: f, DeleteFunc: f, UpdateFunc: func(_, n any) { f(n) }}
}

// healthOf is kstatus of a live object.
func healthOf(live *unstructured.Unstructured) (kstatus.Status, string) {
	res, err := kstatus.Compute(live)
	if err != nil {
		return kstatus.UnknownStatus, err.Error()
	}
	return res.Status, res.Message
}
