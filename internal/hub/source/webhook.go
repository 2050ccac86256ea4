package source

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// WebhookPath prefixes the hub's Git webhook URLs: /hooks/git/<namespace>/<name>.
const WebhookPath = "/hooks/git/"

// MaxWebhookBody bounds a webhook call's body.
const MaxWebhookBody = 1 << 20

// Webhook serves POST /hooks/git/<namespace>/<name>: a call signed with the repository's
// webhook secret (X-Hub-Signature-256: sha256=<hex HMAC of the body>, as GitHub, Gitea and
// GitLab-compatible senders do) makes the hub fetch that repository at once.
type Webhook struct {
	// Repos reads GitRepositories (the cache); Secrets reads the webhook Secrets (uncached).
	Repos, Secrets client.Reader
	Trigger        chan<- event.GenericEvent
}

func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	ns, name, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, WebhookPath), "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		http.Error(w, "want /hooks/git/<namespace>/<name>", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
	if err != nil || len(body) > MaxWebhookBody {
		http.Error(w, "body unreadable or over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	repo := &flv1.GitRepository{}
	if err := h.Repos.Get(r.Context(), key, repo); err != nil {
		// The same answer for "missing" and "not allowed": a caller learns nothing about what exists.
		http.Error(w, "unknown repository or bad signature", http.StatusForbidden)
		return
	}
	if repo.Spec.WebhookSecretRef == nil {
		http.Error(w, "unknown repository or bad signature", http.StatusForbidden)
		return
	}
	s := &corev1.Secret{}
	err = h.Secrets.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: repo.Spec.WebhookSecretRef.Name}, s)
	if err != nil || len(s.Data["token"]) == 0 {
		logf.FromContext(r.Context()).Info("git webhook secret unusable", "repository", key.String(), "error", errOr(err, "no key token"))
		http.Error(w, "unknown repository or bad signature", http.StatusForbidden)
		return
	}
	if !validSignature(s.Data["token"], body, r.Header.Get("X-Hub-Signature-256")) {
		http.Error(w, "unknown repository or bad signature", http.StatusForbidden)
		return
	}
	select {
	case h.Trigger <- event.GenericEvent{Object: repo}:
	case <-time.After(5 * time.Second):
		http.Error(w, "busy, retry", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "fetching %s\n", key)
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// validSignature checks "sha256=<hex>" against the HMAC-SHA256 of body under key.
func validSignature(key, body []byte, header string) bool {
	sig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// Sign returns the X-Hub-Signature-256 value for body under key (for senders and tests).
func Sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ServeWebhook serves the webhook on addr until ctx ends ("0" or "" serves nothing).
func ServeWebhook(ctx context.Context, addr string, h http.Handler) error {
	if addr == "" || addr == "0" {
		<-ctx.Done()
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, h)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("git webhook listener: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// writeTemp stores data in a file named by its hash (known_hosts for the SSH client, which
// reads files), once.
func writeTemp(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	p := filepath.Join(os.TempDir(), "flotilla-known-hosts-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	tmp, err := os.CreateTemp(os.TempDir(), "flotilla-known-hosts-*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
}
