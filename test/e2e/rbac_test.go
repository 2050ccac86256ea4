package e2e

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent"
	"flotilla.dev/flotilla/internal/hub"
	"flotilla.dev/flotilla/internal/hub/membercluster"
)

// agentToken reads the hub token that join stored on member i.
func agentToken(t *testing.T, i int) string {
	t.Helper()
	creds, err := agent.LoadCredentials(context.Background(), memberClient(t, i))
	if err != nil {
		t.Fatal(err)
	}
	return creds.Token
}

// ownReport is the key of cluster's MemberClusterReport, which its agent may read.
func ownReport(cluster string) types.NamespacedName {
	return types.NamespacedName{Namespace: flv1.ClusterNamespace(cluster), Name: cluster}
}

// TestAgentSeesOnlyItsOwnCluster uses cluster A's real agent token against the real hub
// API server (RBAC on): it may read its own report and renew its own Lease, and gets 403 on
// cluster B's namespace and report, on every MemberCluster (its own included: the hub copies
// the report), and on Secrets anywhere.
func TestAgentSeesOnlyItsOwnCluster(t *testing.T) {
	ctx := context.Background()
	a, b := ensureJoined(t, 0), ensureJoined(t, 2)
	c, err := client.New(tokenConfig(agentToken(t, 0)), client.Options{Scheme: hub.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// What A may do, so that the 403s below are about RBAC, not a broken token.
	if err := c.Get(ctx, ownReport(a), &flv1.MemberClusterReport{}); err != nil {
		t.Fatalf("agent A cannot read its own MemberClusterReport: %v", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: flv1.ClusterNamespace(a), Name: flv1.HeartbeatLeaseName}, &coordinationv1.Lease{}); err != nil {
		t.Fatalf("agent A cannot read its own Lease: %v", err)
	}

	otherNS := flv1.ClusterNamespace(b)
	forbidden := []struct {
		what string
		do   func() error
	}{
		{"get its own MemberCluster", func() error { return c.Get(ctx, types.NamespacedName{Name: a}, &flv1.MemberCluster{}) }},
		{"patch its own MemberCluster status", func() error {
			mc := &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: a}}
			return c.Status().Patch(ctx, mc, client.RawPatch(types.MergePatchType, []byte(`{"status":{"agentVersion":"evil"}}`)))
		}},
		{"get B's MemberCluster", func() error { return c.Get(ctx, types.NamespacedName{Name: b}, &flv1.MemberCluster{}) }},
		{"get B's report", func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: otherNS, Name: b}, &flv1.MemberClusterReport{})
		}},
		{"patch B's report", func() error {
			r := &flv1.MemberClusterReport{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: b}}
			return c.Patch(ctx, r, client.RawPatch(types.MergePatchType, []byte(`{"facts":{"agentVersion":"evil"}}`)))
		}},
		{"create a report in B's namespace", func() error {
			return c.Create(ctx, &flv1.MemberClusterReport{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: b + "-evil"}})
		}},
		{"list reports in all namespaces", func() error { return c.List(ctx, &flv1.MemberClusterReportList{}) }},
		{"list all MemberClusters", func() error { return c.List(ctx, &flv1.MemberClusterList{}) }},
		{"patch B's MemberCluster status", func() error {
			mc := &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: b}}
			return c.Status().Patch(ctx, mc, client.RawPatch(types.MergePatchType, []byte(`{"status":{"agentVersion":"evil"}}`)))
		}},
		{"delete its own MemberCluster", func() error {
			return c.Delete(ctx, &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: a}})
		}},
		{"get B's Lease", func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: otherNS, Name: flv1.HeartbeatLeaseName}, &coordinationv1.Lease{})
		}},
		{"list Leases in B's namespace", func() error { return c.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace(otherNS)) }},
		{"create a Lease in B's namespace", func() error {
			return c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: flv1.HeartbeatLeaseName + "-evil"}})
		}},
		{"list ConfigMaps in B's namespace", func() error { return c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(otherNS)) }},
		{"list Secrets in its own namespace", func() error {
			return c.List(ctx, &corev1.SecretList{}, client.InNamespace(flv1.ClusterNamespace(a)))
		}},
		{"list Secrets in B's namespace", func() error { return c.List(ctx, &corev1.SecretList{}, client.InNamespace(otherNS)) }},
		{"list Secrets in kube-system", func() error { return c.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")) }},
		{"list Secrets in all namespaces", func() error { return c.List(ctx, &corev1.SecretList{}) }},
		{"list Namespaces", func() error { return c.List(ctx, &corev1.NamespaceList{}) }},
		{"create a token for B's agent", func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: flv1.AgentServiceAccount}}
			return c.SubResource("token").Create(ctx, sa, &authenticationv1.TokenRequest{})
		}},
	}
	for _, f := range forbidden {
		err := f.do()
		if !apierrors.IsForbidden(err) {
			t.Errorf("agent of %s may %s: want 403 Forbidden, got %v", a, f.what, err)
		}
	}
}

// TestNoClusterScopedGrantPerCluster checks that joined clusters add no ClusterRoleBinding
// (the API server's authorizer scans them all on every request), and that the hub removes
// the per-cluster ClusterRoles and bindings an earlier hub created, and nothing else.
func TestNoClusterScopedGrantPerCluster(t *testing.T) {
	ctx := context.Background()
	ensureJoined(t, 0)
	var crbs rbacv1.ClusterRoleBindingList
	if err := hubC.List(ctx, &crbs, client.HasLabels{flv1.LabelCluster}); err != nil {
		t.Fatal(err)
	}
	for _, b := range crbs.Items {
		t.Errorf("ClusterRoleBinding %s belongs to cluster %s: agent grants must be namespaced", b.Name, b.Labels[flv1.LabelCluster])
	}

	legacy := map[string]string{"app.kubernetes.io/managed-by": "flotilla", flv1.LabelCluster: "old"}
	other := map[string]string{"app.kubernetes.io/managed-by": "flotilla"} // not a cluster's: must stay
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-agent-old", Labels: legacy}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-agent-old", Labels: legacy},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "flotilla-agent-old"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-test-keep", Labels: other}},
	}
	for _, o := range objs {
		if err := hubC.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = hubC.Delete(context.Background(), objs[2]) })
	if err := membercluster.DeleteLegacyClusterRoles(ctx, hubC); err != nil {
		t.Fatal(err)
	}
	for i, o := range objs {
		err := hubC.Get(ctx, client.ObjectKeyFromObject(o), o)
		if gone := apierrors.IsNotFound(err); gone != (i < 2) {
			t.Errorf("%T %s: deleted=%v (err %v), want deleted=%v", o, o.GetName(), gone, err, i < 2)
		}
	}
}
