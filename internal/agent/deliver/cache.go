package deliver

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// Cache keeps the agent's Works and their content on the member itself, in Secrets of the
// agent's namespace (content may hold Secrets too), so that the agent keeps delivering and
// correcting drift while the hub is unreachable, also across restarts.
type Cache struct {
	Client    kubernetes.Interface
	Namespace string
}

const (
	cacheLabel      = "flotilla.dev/cache"
	cacheWork       = "work"
	cacheChunk      = "chunk"
	cacheWorkPrefix = "flotilla-work-"
	cacheDataKey    = "data"
)

func chunkSecretName(chunk string) string { return "flotilla-chunk-" + chunk }

// Works returns every cached Work.
func (c *Cache) Works(ctx context.Context) ([]*flv1.Work, error) {
	list, err := c.Client.CoreV1().Secrets(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: cacheLabel + "=" + cacheWork})
	if err != nil {
		return nil, fmt.Errorf("read cached Works on the member: %w", err)
	}
	var out []*flv1.Work
	for _, s := range list.Items {
		w := &flv1.Work{}
		if err := json.Unmarshal(s.Data[cacheDataKey], w); err != nil {
			return nil, fmt.Errorf("cached Work %s is corrupt: %w", s.Name, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// PutWork records w's spec (not its status).
func (c *Cache) PutWork(ctx context.Context, w *flv1.Work) error {
	keep := &flv1.Work{TypeMeta: w.TypeMeta, Spec: w.Spec}
	keep.Name, keep.Namespace, keep.Generation, keep.ResourceVersion, keep.UID = w.Name, w.Namespace, w.Generation, w.ResourceVersion, w.UID
	b, err := json.Marshal(keep)
	if err != nil {
		return err
	}
	return c.put(ctx, cacheWorkPrefix+w.Name, cacheWork, b)
}

// DeleteWork forgets a Work.
func (c *Cache) DeleteWork(ctx context.Context, name string) error {
	err := c.Client.CoreV1().Secrets(c.Namespace).Delete(ctx, cacheWorkPrefix+name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Chunk returns a cached chunk, or nil.
func (c *Cache) Chunk(ctx context.Context, name string) ([]byte, error) {
	s, err := c.Client.CoreV1().Secrets(c.Namespace).Get(ctx, chunkSecretName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.Data[cacheDataKey], nil
}

// PutChunk stores a chunk (immutable: an existing one is kept).
func (c *Cache) PutChunk(ctx context.Context, name string, data []byte) error {
	s := c.secret(chunkSecretName(name), cacheChunk, data)
	_, err := c.Client.CoreV1().Secrets(c.Namespace).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// PruneChunks deletes cached chunks that no Work in keep names.
func (c *Cache) PruneChunks(ctx context.Context, keep map[string]bool) error {
	list, err := c.Client.CoreV1().Secrets(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: cacheLabel + "=" + cacheChunk})
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if keep[s.Name] {
			continue
		}
		if err := c.Client.CoreV1().Secrets(c.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (c *Cache) secret(name, kind string, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace,
			Labels: map[string]string{cacheLabel: kind, "app.kubernetes.io/managed-by": "flotilla"}},
		Type: "flotilla.dev/cache",
		Data: map[string][]byte{cacheDataKey: data},
	}
}

func (c *Cache) put(ctx context.Context, name, kind string, data []byte) error {
	s := c.secret(name, kind, data)
	secrets := c.Client.CoreV1().Secrets(c.Namespace)
	_, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
	}
	return err
}
