// Package membercluster is the hub's inventory controller: for each accepted MemberCluster it
// provisions the hub namespace cluster-<name>, the agent's ServiceAccount and least-privilege
// RBAC, and computes the Joined and Ready conditions from the agent's heartbeat Lease.
// Deleting a MemberCluster revokes the agent's credentials (its ServiceAccount goes first,
// which invalidates every token issued for it) and removes its namespace.
package membercluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// FieldOwner is the server-side-apply field manager of the hub.
const FieldOwner = "flotilla-hub"

// Reconciler reconciles MemberClusters.
type Reconciler struct {
	Client client.Client
	// HeartbeatGrace overrides the default grace (DefaultGraceMultiplier x the interval the
	// agent declares) after which a cluster without heartbeat is Unreachable.
	HeartbeatGrace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ProvisionWorkers is how many MemberClusters the hub reconciles at once.
const ProvisionWorkers = 16

// SetupWithManager registers the controller. Owned objects and Leases are mapped back to
// their MemberCluster, so a deleted ServiceAccount is recreated and a heartbeat is noticed
// at once.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if name := o.GetLabels()[flv1.LabelCluster]; name != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
		}
		return nil
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("membercluster").
		// Clusters are independent, and provisioning one is several round trips: one at a
		// time, 1,000 joining clusters took about 50 s to become Ready (`flotilla bench join`).
		WithOptions(controller.Options{MaxConcurrentReconciles: ProvisionWorkers}).
		For(&flv1.MemberCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}, deletingPredicate())))
	for _, o := range provisionedKinds() {
		b = b.Watches(o, toCluster, builder.WithPredicates(deletedPredicate()))
	}
	return b.Watches(&coordinationv1.Lease{}, toCluster, builder.WithPredicates(leaseEvents(r.HeartbeatGrace))).
		Watches(&flv1.MemberClusterReport{}, handler.EnqueueRequestsFromMapFunc(reportToCluster)).
		Complete(r)
}

// provisionedKinds are the kinds provision creates for each cluster. The hub only checks
// that they exist, so it watches and caches their metadata alone: their rules and subjects
// were about 7 KB of the hub's heap per cluster (`flotilla bench idle --profile-dir`).
func provisionedKinds() []client.Object {
	return []client.Object{metadataOf(gvkNamespace), metadataOf(gvkServiceAccount), metadataOf(gvkRole),
		metadataOf(gvkRoleBinding)}
}

var (
	gvkNamespace      = corev1.SchemeGroupVersion.WithKind("Namespace")
	gvkServiceAccount = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	gvkRole           = rbacv1.SchemeGroupVersion.WithKind("Role")
	gvkRoleBinding    = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
)

// metadataOf is an object of kind gvk of which the cache holds only the metadata.
func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// CachedObjects lists the kinds this controller reads from the cache that the hub caches
// only when labelled with flotilla.dev/cluster, so that it never caches the whole hub.
// (MemberClusterReports are cached whatever their labels: they exist only in cluster
// namespaces, and an agent's report is never ignored for a missing label.)
func CachedObjects() []client.Object {
	return append(provisionedKinds(), &coordinationv1.Lease{})
}

// Reconcile provisions, cleans up and evaluates one MemberCluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	mc := &flv1.MemberCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.cleanup(ctx, mc)
	}
	if !controllerutil.ContainsFinalizer(mc, flv1.MemberClusterFinalizer) {
		patch := client.MergeFrom(mc.DeepCopy())
		controllerutil.AddFinalizer(mc, flv1.MemberClusterFinalizer)
		if err := r.Client.Patch(ctx, mc, patch); err != nil {
			return ctrl.Result{}, err
		}
	}

	before := mc.Status.DeepCopy()
	var provisionErr error
	var hb heartbeat
	if mc.Spec.Accepted {
		// Heartbeats trigger most reconciles; they must not cost six API writes each.
		if mc.Status.ObservedGeneration != mc.Generation || !r.provisioned(ctx, mc) {
			provisionErr = r.provision(ctx, mc)
		}
		lease := &coordinationv1.Lease{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: flv1.ClusterNamespace(mc.Name), Name: flv1.HeartbeatLeaseName}, lease)
		switch {
		case err == nil:
			hb = heartbeatFromLease(lease)
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
		mc.Status.Namespace = flv1.ClusterNamespace(mc.Name)
		if err := r.copyReport(ctx, mc); err != nil {
			return ctrl.Result{}, err
		}
	}
	setJoinedCondition(mc, provisionErr, hb)
	next := setReadyCondition(mc, hb, r.now(), r.HeartbeatGrace)
	mc.Status.ObservedGeneration = mc.Generation
	if recordHeartbeat(mc, before, hb) {
		if err := r.applyStatus(ctx, mc); err != nil {
			return ctrl.Result{}, err
		}
		log.V(1).Info("status updated", "ready", conditionStatus(mc.Status.Conditions, flv1.ConditionReady))
	}
	if provisionErr != nil {
		return ctrl.Result{}, provisionErr
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

func conditionStatus(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Status
	}
	return ""
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// provision applies the namespace, identity and RBAC of an accepted cluster. Server-side
// apply makes it idempotent, and restores anything someone changed by hand.
func (r *Reconciler) provision(ctx context.Context, mc *flv1.MemberCluster) error {
	opts := []client.ApplyOption{client.FieldOwner(FieldOwner), client.ForceOwnership}
	for _, ac := range []runtime.ApplyConfiguration{
		desiredNamespace(mc), desiredServiceAccount(mc), desiredRole(mc), desiredRoleBinding(mc),
		desiredContentRoleBinding(mc),
	} {
		if err := r.Client.Apply(ctx, ac, opts...); err != nil {
			return err
		}
	}
	return nil
}

// provisioned reports whether every object provision creates is in the cache. Deleting one
// triggers a reconcile (they are watched), which then finds it missing and applies again.
func (r *Reconciler) provisioned(ctx context.Context, mc *flv1.MemberCluster) bool {
	ns := flv1.ClusterNamespace(mc.Name)
	for _, o := range []struct {
		key types.NamespacedName
		gvk schema.GroupVersionKind
	}{
		{types.NamespacedName{Name: ns}, gvkNamespace},
		{types.NamespacedName{Namespace: ns, Name: flv1.AgentServiceAccount}, gvkServiceAccount},
		{types.NamespacedName{Namespace: ns, Name: AgentRoleName}, gvkRole},
		{types.NamespacedName{Namespace: ns, Name: AgentRoleName}, gvkRoleBinding},
		{types.NamespacedName{Namespace: flv1.ContentNamespace, Name: ContentRoleBindingName(mc.Name)}, gvkRoleBinding},
	} {
		obj := metadataOf(o.gvk)
		if err := r.Client.Get(ctx, o.key, obj); err != nil || !obj.GetDeletionTimestamp().IsZero() {
			return false
		}
	}
	return true
}

// cleanup revokes the agent's credentials and removes what provision created. The
// ServiceAccount is deleted first: every token bound to it stops working at that moment,
// before the namespace (which may take a while to terminate) is gone.
func (r *Reconciler) cleanup(ctx context.Context, mc *flv1.MemberCluster) error {
	if !controllerutil.ContainsFinalizer(mc, flv1.MemberClusterFinalizer) {
		return nil
	}
	ns := flv1.ClusterNamespace(mc.Name)
	var errs []error
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: flv1.AgentServiceAccount}},
		// The bindings go at once too: a token the API server validated a moment ago may be
		// cached for a few seconds, and the namespace's own objects go only when it terminates.
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: AgentRoleName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: flv1.ContentNamespace, Name: ContentRoleBindingName(mc.Name)}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
	} {
		if err := r.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %T %s: %w", o, o.GetName(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	patch := client.MergeFrom(mc.DeepCopy())
	controllerutil.RemoveFinalizer(mc, flv1.MemberClusterFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, mc, patch))
}

// hubStatus is the MemberCluster status the hub applies: all of it. (Agents before the
// MemberClusterReport wrote the facts themselves; ForceOwnership takes those fields over.)
type hubStatus struct {
	ObservedGeneration int64              `json:"observedGeneration"`
	Conditions         []metav1.Condition `json:"conditions"`
	Namespace          string             `json:"namespace,omitempty"`
	LastHeartbeatTime  *metav1.Time       `json:"lastHeartbeatTime,omitempty"`
	flv1.ClusterFacts  `json:",inline"`
}

func (r *Reconciler) applyStatus(ctx context.Context, mc *flv1.MemberCluster) error {
	var conds []metav1.Condition
	for _, c := range mc.Status.Conditions {
		if c.Type == flv1.ConditionJoined || c.Type == flv1.ConditionReady {
			conds = append(conds, c)
		}
	}
	u, err := flv1.MemberClusterStatusApply(mc.Name, hubStatus{mc.Status.ObservedGeneration, conds, mc.Status.Namespace, mc.Status.LastHeartbeatTime, mc.Status.ClusterFacts})
	if err != nil {
		return err
	}
	return r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership)
}

func deletedPredicate() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return false },
		DeleteFunc:  func(e event.DeleteEvent) bool { return true },
		GenericFunc: func(e event.GenericEvent) bool { return false },
	}
}

func deletingPredicate() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() }}
}
