package bundle

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// FieldOwner is the hub's field manager on Works. Other managers own other fields (the
// CLI owns spec.breakGlass), and server-side apply keeps them apart.
const FieldOwner = "flotilla-hub"

// desiredWorkSpec is what a cluster should run for a Bundle at a revision.
func desiredWorkSpec(b *flv1.Bundle, mc *flv1.MemberCluster, rev string, ref flv1.ContentReference) flv1.WorkSpec {
	return flv1.WorkSpec{
		Bundle:          flv1.BundleReference{Namespace: b.Namespace, Name: b.Name},
		Revision:        rev,
		Content:         ref,
		Variables:       flv1.WorkVariables{ClusterName: mc.Name, Owner: mc.Spec.Owner, Labels: mc.Labels},
		TargetNamespace: b.Spec.TargetNamespace,
		Apply:           b.Spec.Apply,
	}
}

func workLabels(b *flv1.Bundle, cluster string) map[string]string {
	return map[string]string{
		flv1.LabelCluster: cluster, flv1.LabelBundleNamespace: b.Namespace, flv1.LabelBundleName: b.Name,
		"app.kubernetes.io/managed-by": "flotilla",
	}
}

// upToDate reports whether an existing Work already carries the desired spec: most
// reconciles change nothing, and skipping them keeps the hub's writes proportional to change.
func upToDate(w *flv1.Work, spec flv1.WorkSpec, lbls map[string]string) bool {
	have := w.Spec
	have.BreakGlass = nil
	for k, v := range lbls {
		if w.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(have, spec)
}

// applyWork server-side-applies the hub's part of a Work.
func (r *Reconciler) applyWork(ctx context.Context, b *flv1.Bundle, cluster string, spec flv1.WorkSpec) error {
	w := &flv1.Work{Spec: spec}
	w.APIVersion, w.Kind = flv1.GroupVersion.String(), "Work"
	w.Name, w.Namespace = flv1.WorkName(b.Namespace, b.Name), flv1.ClusterNamespace(cluster)
	w.Labels = workLabels(b, cluster)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	if err != nil {
		return err
	}
	delete(m, "status")
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	u := client.ApplyConfigurationFromUnstructured(toUnstructured(m))
	if err := r.Client.Apply(ctx, u, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("write Work for cluster %s: %w", cluster, err)
	}
	return nil
}
