package agent

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func fakeJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return "e30." + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

func TestParseToken(t *testing.T) {
	iat := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tok := fakeJWT(t, map[string]any{"sub": "system:serviceaccount:cluster-a:flotilla-agent", "iat": iat.Unix(), "exp": iat.Add(10 * time.Hour).Unix()})
	c, err := parseToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	ns, name, err := c.serviceAccount()
	if err != nil || ns != "cluster-a" || name != "flotilla-agent" {
		t.Fatalf("serviceAccount() = %q %q %v", ns, name, err)
	}
	if got := c.rotateAt(DefaultRotateFraction); !got.Equal(iat.Add(8 * time.Hour)) {
		t.Fatalf("rotateAt = %s, want iat+8h", got)
	}

	for _, bad := range []struct{ tok, want string }{
		{"not-a-jwt", "not a JWT"},
		{"a.!!!.c", "payload"},
		{"a." + base64.RawURLEncoding.EncodeToString([]byte("[]")) + ".c", "claims"},
	} {
		if _, err := parseToken(bad.tok); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("parseToken(%q) = %v, want error with %q", bad.tok, err, bad.want)
		}
	}
	user := tokenClaims{Subject: "alice"}
	if _, _, err := user.serviceAccount(); err == nil {
		t.Error("a user subject must not pass as a ServiceAccount")
	}
}
