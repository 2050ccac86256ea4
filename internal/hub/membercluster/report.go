package membercluster

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	labelspkg "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// reportToCluster maps a MemberClusterReport to the MemberCluster of its namespace. The
// namespace decides, not the report's name or labels, which its agent writes.
func reportToCluster(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := strings.CutPrefix(o.GetNamespace(), flv1.ClusterNamespacePrefix)
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// copyReport copies the facts of the cluster's report into its status. Without a report
// (an agent not started yet, or one from before reports) the facts in status stay.
func (r *Reconciler) copyReport(ctx context.Context, mc *flv1.MemberCluster) error {
	rep := &flv1.MemberClusterReport{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: flv1.ClusterNamespace(mc.Name), Name: mc.Name}, rep)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	mc.Status.ClusterFacts = rep.Facts // the cache handed out a copy
	return nil
}

// DeleteLegacyClusterRoles removes the per-cluster ClusterRoles and ClusterRoleBindings
// that hubs before MemberClusterReports created (flotilla-agent-<cluster>, granting an
// agent its own MemberCluster). Agents no longer need them, and every ClusterRoleBinding
// slows every request the API server authorizes. Selected by the labels the hub set on
// them, so nothing else is touched.
func DeleteLegacyClusterRoles(ctx context.Context, c client.Client) error {
	sel, err := labelspkg.Parse("app.kubernetes.io/managed-by=flotilla," + flv1.LabelCluster)
	if err != nil {
		return err
	}
	in := client.MatchingLabelsSelector{Selector: sel}
	if err := c.DeleteAllOf(ctx, &rbacv1.ClusterRoleBinding{}, in); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the per-cluster ClusterRoleBindings of an earlier hub: %w", err)
	}
	if err := c.DeleteAllOf(ctx, &rbacv1.ClusterRole{}, in); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the per-cluster ClusterRoles of an earlier hub: %w", err)
	}
	return nil
}
