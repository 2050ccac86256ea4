package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func labelCluster(t *testing.T, name, key, value string) {
	t.Helper()
	mc := &flv1.MemberCluster{}
	if err := hubC.Get(context.Background(), types.NamespacedName{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(mc.DeepCopy())
	if value == "" {
		delete(mc.Labels, key)
	} else {
		mc.Labels[key] = value
	}
	if err := hubC.Patch(context.Background(), mc, patch); err != nil {
		t.Fatal(err)
	}
}

// TestLabelChangeMovesClusterInAndOut: a cluster gains a Bundle when it gets a matching
// label and loses it (objects pruned) when the label goes; an object dropped from the
// Bundle is pruned on the clusters that keep it.
func TestLabelChangeMovesClusterInAndOut(t *testing.T) {
	c0 := ensureJoined(t, 0)
	c1 := ensureJoined(t, 1)
	labelCluster(t, c1, "e2e-move", "in")
	defer labelCluster(t, c1, "e2e-move", "")
	createBundle(t, "team-move", "mover", nil, func(b *flv1.Bundle) {
		b.Spec.Placement = flv1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-move": "in"}}}
	}, configMapObj("keep", map[string]any{"v": "1"}), configMapObj("drop", map[string]any{"v": "1"}))
	waitBundle(t, "team-move", "mover", 60*time.Second, "mover on member 1", bundleReady(1))
	waitMemberConfigMap(t, 0, "mover", "keep", 5*time.Second, "member 0 not placed", absent)

	start := time.Now()
	labelCluster(t, c0, "e2e-move", "in")
	waitMemberConfigMap(t, 0, "mover", "keep", 30*time.Second, "member 0 gains the bundle", hasValue("v", "1"))
	t.Logf("labelled cluster received the bundle %s after the label change", time.Since(start).Round(time.Millisecond))
	waitBundle(t, "team-move", "mover", 30*time.Second, "mover on 2 clusters", bundleReady(2))

	start = time.Now()
	labelCluster(t, c0, "e2e-move", "")
	waitMemberConfigMap(t, 0, "mover", "keep", 30*time.Second, "member 0 loses the bundle (pruned)", absent)
	t.Logf("unlabelled cluster's objects were removed %s after the label change", time.Since(start).Round(time.Millisecond))
	waitMemberConfigMap(t, 0, "mover", "drop", 5*time.Second, "member 0 loses every object", absent)

	updateBundle(t, "team-move", "mover", func(b *flv1.Bundle) {
		b.Spec.Source.Inline.Resources = rawObjects(t, configMapObj("keep", map[string]any{"v": "2"}))
	})
	waitMemberConfigMap(t, 1, "mover", "keep", 30*time.Second, "member 1 gets the new revision", hasValue("v", "2"))
	waitMemberConfigMap(t, 1, "mover", "drop", 30*time.Second, "the dropped object is pruned on member 1", absent)
	waitBundle(t, "team-move", "mover", 30*time.Second, "mover ready at the new revision", bundleReady(1))

	// Deleting the Bundle removes its objects.
	deleteBundle(t, "team-move", "mover")
	waitMemberConfigMap(t, 1, "mover", "keep", 30*time.Second, "objects removed with the bundle", absent)
}
