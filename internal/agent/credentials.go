package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Where the agent's hub credentials live on its member cluster. `flotilla join` writes them;
// the agent reads them at start and writes rotated tokens back, so a restarted agent (a
// Deployment's pod or a local process) always finds the newest token.
const (
	SystemNamespace   = "flotilla-system"
	CredentialsSecret = "flotilla-hub"

	KeyServer  = "server"
	KeyCA      = "ca.crt"
	KeyToken   = "token"
	KeyCluster = "cluster"
)

// Credentials let an agent talk to the hub as its cluster's ServiceAccount.
type Credentials struct {
	Server  string
	CA      []byte
	Token   string
	Cluster string
}

// LoadCredentials reads the credentials Secret from the member cluster.
func LoadCredentials(ctx context.Context, member kubernetes.Interface) (*Credentials, error) {
	s, err := member.CoreV1().Secrets(SystemNamespace).Get(ctx, CredentialsSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s/%s not found on the member cluster: join it with `flotilla join`", SystemNamespace, CredentialsSecret)
	}
	if err != nil {
		return nil, fmt.Errorf("read hub credentials from the member cluster: %w", err)
	}
	c := &Credentials{Server: string(s.Data[KeyServer]), CA: s.Data[KeyCA], Token: string(s.Data[KeyToken]), Cluster: string(s.Data[KeyCluster])}
	if c.Server == "" || c.Token == "" || c.Cluster == "" {
		return nil, fmt.Errorf("secret %s/%s lacks %q, %q or %q: re-join the cluster", SystemNamespace, CredentialsSecret, KeyServer, KeyToken, KeyCluster)
	}
	return c, nil
}

// CredentialsSecretObject is the Secret that holds c.
func CredentialsSecretObject(c *Credentials) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: CredentialsSecret, Namespace: SystemNamespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "flotilla"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KeyServer: []byte(c.Server), KeyCA: c.CA, KeyToken: []byte(c.Token), KeyCluster: []byte(c.Cluster)},
	}
}

// saveToken writes a rotated token back into the credentials Secret.
func saveToken(ctx context.Context, member kubernetes.Interface, token string) error {
	s, err := member.CoreV1().Secrets(SystemNamespace).Get(ctx, CredentialsSecret, metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.Data[KeyToken] = []byte(token)
	_, err = member.CoreV1().Secrets(SystemNamespace).Update(ctx, s, metav1.UpdateOptions{})
	return err
}
