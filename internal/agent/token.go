package agent

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// tokenClaims are the parts of a ServiceAccount JWT the agent needs: when it expires (to
// rotate in time) and whose it is (to request the next one). The hub verifies the token;
// the agent only reads it.
type tokenClaims struct {
	Subject   string `json:"sub"`
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf"`
	Expiry    int64  `json:"exp"`
}

func parseToken(tok string) (tokenClaims, error) {
	var c tokenClaims
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return c, fmt.Errorf("hub token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return c, fmt.Errorf("hub token payload: %w", err)
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, fmt.Errorf("hub token claims: %w", err)
	}
	return c, nil
}

// serviceAccount returns namespace and name from a subject system:serviceaccount:NS:NAME.
func (c tokenClaims) serviceAccount() (ns, name string, err error) {
	p := strings.Split(c.Subject, ":")
	if len(p) != 4 || p[0] != "system" || p[1] != "serviceaccount" {
		return "", "", fmt.Errorf("hub token subject %q is not a ServiceAccount", c.Subject)
	}
	return p[2], p[3], nil
}

func (c tokenClaims) lifetime() time.Duration {
	return time.Unix(c.Expiry, 0).Sub(time.Unix(c.IssuedAt, 0))
}

// DefaultRotateFraction: a token is replaced once this share of its lifetime has passed,
// leaving a fifth of it to retry through a hub outage.
const DefaultRotateFraction = 0.8

// rotateAt is when a token should be replaced.
func (c tokenClaims) rotateAt(fraction float64) time.Time {
	return time.Unix(c.IssuedAt, 0).Add(time.Duration(float64(c.lifetime()) * fraction))
}

// tokenHolder holds the current hub token; every hub request reads it, so a rotation takes
// effect on the next request without rebuilding clients.
type tokenHolder struct {
	mu  sync.RWMutex
	tok string
}

func (h *tokenHolder) get() string  { h.mu.RLock(); defer h.mu.RUnlock(); return h.tok }
func (h *tokenHolder) set(t string) { h.mu.Lock(); h.tok = t; h.mu.Unlock() }

type bearerTransport struct {
	next http.RoundTripper
	h    *tokenHolder
}

func (b *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+b.h.get())
	return b.next.RoundTrip(r)
}
