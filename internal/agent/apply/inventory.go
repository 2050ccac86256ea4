package apply

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Inventory records, on the member itself, what each Work last applied, so that pruning
// survives agent restarts and hub outages. One ConfigMap per Work in the agent's namespace.
type Inventory struct {
	Client    kubernetes.Interface
	Namespace string
}

const (
	inventoryKey = "objects"
	// inventoryLabel marks inventory ConfigMaps; the annotation of the same name holds the
	// Work's name (which may be longer than a label value may be).
	inventoryLabel = "flotilla.dev/inventory"
)

func inventoryName(work string) string { return "flotilla-inventory-" + work }

// Load returns what was applied for work (nothing if it never was).
func (inv *Inventory) Load(ctx context.Context, work string) ([]Ref, error) {
	cm, err := inv.Client.CoreV1().ConfigMaps(inv.Namespace).Get(ctx, inventoryName(work), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read inventory of %s: %w", work, err)
	}
	var refs []Ref
	if err := json.Unmarshal([]byte(cm.Data[inventoryKey]), &refs); err != nil {
		return nil, fmt.Errorf("inventory of %s is corrupt: %w", work, err)
	}
	return refs, nil
}

// Save records refs as what is applied for work.
func (inv *Inventory) Save(ctx context.Context, work string, refs []Ref) error {
	b, err := json.Marshal(refs)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: inventoryName(work), Namespace: inv.Namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "flotilla", inventoryLabel: "true"},
			Annotations: map[string]string{inventoryLabel: work}},
		Data: map[string]string{inventoryKey: string(b)},
	}
	cms := inv.Client.CoreV1().ConfigMaps(inv.Namespace)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	} else {
		return err
	}
}

// Works lists the Works that have an inventory on the member.
func (inv *Inventory) Works(ctx context.Context) ([]string, error) {
	list, err := inv.Client.CoreV1().ConfigMaps(inv.Namespace).List(ctx, metav1.ListOptions{LabelSelector: inventoryLabel})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cm := range list.Items {
		if w := cm.Annotations[inventoryLabel]; w != "" {
			out = append(out, w)
		}
	}
	return out, nil
}

// Delete forgets the inventory of work.
func (inv *Inventory) Delete(ctx context.Context, work string) error {
	err := inv.Client.CoreV1().ConfigMaps(inv.Namespace).Delete(ctx, inventoryName(work), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
