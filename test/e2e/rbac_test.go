package e2e

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent"
	"flotilla.dev/flotilla/internal/hub"
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

// TestAgentSeesOnlyItsOwnCluster uses cluster A's real agent token against the real hub
// API server (RBAC on): it may read its own MemberCluster and renew its own Lease, and gets
// 403 on cluster B's namespace, on B's MemberCluster, and on Secrets anywhere.
func TestAgentSeesOnlyItsOwnCluster(t *testing.T) {
	ctx := context.Background()
	a, b := ensureJoined(t, 0), ensureJoined(t, 2)
	c, err := client.New(tokenConfig(agentToken(t, 0)), client.Options{Scheme: hub.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// What A may do, so that the 403s below are about RBAC, not a broken token.
	own := &flv1.MemberCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: a}, own); err != nil {
		t.Fatalf("agent A cannot read its own MemberCluster: %v", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: flv1.ClusterNamespace(a), Name: flv1.HeartbeatLeaseName}, &coordinationv1.Lease{}); err != nil {
		t.Fatalf("agent A cannot read its own Lease: %v", err)
	}

	otherNS := flv1.ClusterNamespace(b)
	forbidden := []struct {
		what string
		do   func() error
	}{
		{"get B's MemberCluster", func() error { return c.Get(ctx, types.NamespacedName{Name: b}, &flv1.MemberCluster{}) }},
		{"list all MemberClusters", func() error { return c.List(ctx, &flv1.MemberClusterList{}) }},
		{"patch B's MemberCluster status", func() error {
			mc := &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: b}}
			return c.Status().Patch(ctx, mc, client.RawPatch(types.MergePatchType, []byte(`{"status":{"agentVersion":"evil"}}`)))
		}},
		{"delete its own MemberCluster", func() error { return c.Delete(ctx, own.DeepCopy()) }},
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
