package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

func configMapObj(name string, data map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": data}
}

// createBundle creates a Bundle in ns on the named clusters, and deletes it at the end of
// the test (waiting until its objects are gone from the members).
func createBundle(t *testing.T, ns, name string, clusters []string, mutate func(*flv1.Bundle), objs ...map[string]any) *flv1.Bundle {
	t.Helper()
	ensureHubNamespace(t, ns)
	b := &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: flv1.BundleSpec{TargetNamespace: name, Placement: flv1.Placement{ClusterNames: clusters},
			Source: flv1.BundleSource{Inline: &flv1.InlineSource{Resources: rawObjects(t, objs...)}}}}
	if mutate != nil {
		mutate(b)
	}
	if err := hubC.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteBundle(t, ns, name) })
	return b
}

func deleteBundle(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	b := &flv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := hubC.Delete(ctx, b); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete bundle %s: %v", name, err)
		return
	}
	eventually(t, 30*time.Second, "bundle "+name+" deleted", func() error {
		err := hubC.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &flv1.Bundle{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// updateBundle re-reads, mutates and updates a Bundle, retrying on conflicts.
func updateBundle(t *testing.T, ns, name string, mutate func(*flv1.Bundle)) {
	t.Helper()
	eventually(t, 10*time.Second, "update bundle "+name, func() error {
		b := getBundle(t, ns, name)
		mutate(b)
		return hubC.Update(context.Background(), b)
	})
}

func getWork(t *testing.T, cluster, ns, bundle string) *flv1.Work {
	t.Helper()
	w := &flv1.Work{}
	if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: flv1.ClusterNamespace(cluster), Name: flv1.WorkName(ns, bundle)}, w); err != nil {
		t.Fatal(err)
	}
	return w
}

// waitWork waits until the cluster's Work for a Bundle satisfies ok.
func waitWork(t *testing.T, cluster, ns, bundle string, timeout time.Duration, what string, ok func(*flv1.Work) error) *flv1.Work {
	t.Helper()
	var w *flv1.Work
	eventually(t, timeout, what, func() error {
		w = &flv1.Work{}
		if err := hubC.Get(context.Background(), types.NamespacedName{Namespace: flv1.ClusterNamespace(cluster), Name: flv1.WorkName(ns, bundle)}, w); err != nil {
			return err
		}
		if err := ok(w); err != nil {
			return fmt.Errorf("%w (conditions: %s)", err, conditionsText(w.Status.Conditions))
		}
		return nil
	})
	return w
}

func workCondition(w *flv1.Work, typ string) *metav1.Condition {
	return meta.FindStatusCondition(w.Status.Conditions, typ)
}

// memberConfigMap waits for a ConfigMap on member i to satisfy ok (nil data: absent).
func waitMemberConfigMap(t *testing.T, i int, ns, name string, timeout time.Duration, what string, ok func(data map[string]string, found bool) error) {
	t.Helper()
	cs := memberClient(t, i)
	eventually(t, timeout, what, func() error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ok(nil, false)
		}
		if err != nil {
			return err
		}
		return ok(cm.Data, true)
	})
}

// memberConfigMapStays fails unless ok holds at every poll for the whole duration: the
// proof that the agent leaves something alone.
func memberConfigMapStays(t *testing.T, i int, ns, name string, d time.Duration, what string, ok func(data map[string]string, found bool) error) {
	t.Helper()
	cs := memberClient(t, i)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			err = ok(nil, false)
		} else if err == nil {
			err = ok(cm.Data, true)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

func hasValue(key, want string) func(map[string]string, bool) error {
	return func(d map[string]string, found bool) error {
		if !found {
			return fmt.Errorf("not found")
		}
		if d[key] != want {
			return fmt.Errorf("data[%s] = %q, want %q", key, d[key], want)
		}
		return nil
	}
}

func absent(d map[string]string, found bool) error {
	if found {
		return fmt.Errorf("still there: %v", d)
	}
	return nil
}

// setMemberConfigMapValue changes a delivered ConfigMap on a member, as a person with
// kubectl edit would.
func setMemberConfigMapValue(t *testing.T, i int, ns, name, key, value string) {
	t.Helper()
	cs := memberClient(t, i)
	eventually(t, 10*time.Second, "edit ConfigMap on member", func() error {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data[key] = value
		_, err = cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
}
