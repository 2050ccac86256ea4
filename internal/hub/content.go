package hub

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub/membercluster"
)

// ContentKeySecret holds the key that derives content chunk names. Losing it only means new
// names for new content; rotating it is deleting the Secret and restarting the hub.
const ContentKeySecret = "flotilla-content-key"

// ensureContentAccess creates the content key (once) and the Role agents read chunks with.
func ensureContentAccess(ctx context.Context, cfg *rest.Config) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := cs.RbacV1().Roles(flv1.ContentNamespace).Apply(ctx,
		membercluster.DesiredContentReaderRole(), metav1.ApplyOptions{FieldManager: membercluster.FieldOwner, Force: true}); err != nil {
		return nil, fmt.Errorf("create the content reader Role on the hub: %w", err)
	}
	secrets := cs.CoreV1().Secrets(SystemNamespace)
	s, err := secrets.Get(ctx, ContentKeySecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ContentKeySecret, Namespace: SystemNamespace},
			Data: map[string][]byte{"key": key}}
		if s, err = secrets.Create(ctx, s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			s, err = secrets.Get(ctx, ContentKeySecret, metav1.GetOptions{}) // another replica won
		}
	}
	if err != nil {
		return nil, fmt.Errorf("content key Secret %s/%s: %w", SystemNamespace, ContentKeySecret, err)
	}
	if len(s.Data["key"]) < 16 {
		return nil, fmt.Errorf("content key Secret %s/%s has no usable key: delete it and restart the hub", SystemNamespace, ContentKeySecret)
	}
	return s.Data["key"], nil
}
