package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/agent"
)

// TestJoinRejectsBadInput: each bad input gives a clear error and leaves nothing behind,
// neither a MemberCluster on the hub nor agent objects on the member.
func TestJoinRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	existing := ensureJoined(t, 0)
	const fresh = 4 // a member nobody joined
	freshKC := env.Members[fresh].Kubeconfig
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.kubeconfig")
	if err := os.WriteFile(garbage, []byte("this: [is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "unreadable.kubeconfig")
	if err := os.WriteFile(unreadable, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(freshKC)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	unreachable := filepath.Join(dir, "unreachable.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, unreachable); err != nil {
		t.Fatal(err)
	}
	cfg, _ = clientcmd.LoadFromFile(freshKC)
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.Token = nil, nil, "not-a-valid-token"
	}
	wrongCreds := filepath.Join(dir, "wrong-creds.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, wrongCreds); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing kubeconfig file", []string{"join", "c1", "--member-kubeconfig", filepath.Join(dir, "nope")}, "cannot read member kubeconfig"},
		{"unreadable kubeconfig file", []string{"join", "c1", "--member-kubeconfig", unreadable}, "member kubeconfig"},
		{"not a kubeconfig", []string{"join", "c1", "--member-kubeconfig", garbage}, "is not usable"},
		{"member unreachable", []string{"join", "c1", "--member-kubeconfig", unreachable}, "unreachable"},
		{"member rejects credentials", []string{"join", "c1", "--member-kubeconfig", wrongCreds}, "rejects these credentials"},
		{"no member kubeconfig", []string{"join", "c1"}, "member-kubeconfig"},
		{"duplicate name", []string{"join", existing, "--member-kubeconfig", freshKC}, "already in the fleet"},
		{"member already joined", []string{"join", "c1", "--member-kubeconfig", env.Members[0].Kubeconfig}, "already joined to a hub as cluster"},
		{"invalid label key", []string{"join", "c1", "--member-kubeconfig", freshKC, "--labels", "bad key=x"}, "invalid label key"},
		{"invalid label value", []string{"join", "c1", "--member-kubeconfig", freshKC, "--labels", "env=not valid"}, "invalid value"},
		{"label without value", []string{"join", "c1", "--member-kubeconfig", freshKC, "--labels", "env"}, "want key=value"},
		{"invalid name", []string{"join", "Bad_Name", "--member-kubeconfig", freshKC}, "invalid cluster name"},
		{"token too short", []string{"join", "c1", "--member-kubeconfig", freshKC, "--token-ttl", "1m"}, "too short"},
		// The agent cannot start (unknown flag), so it never connects: join must undo
		// the MemberCluster, the hub identity and everything it installed on the member.
		{"agent never connects", []string{"join", "c1", "--member-kubeconfig", freshKC, "--local", "--wait", "5s",
			"--agent-arg=--no-such-flag"}, "did not become Ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := flotilla(t, tt.args...)
			if err == nil {
				t.Fatalf("join succeeded, want an error containing %q:\n%s", tt.wantErr, out)
			}
			if !strings.Contains(out, tt.wantErr) {
				t.Fatalf("error does not say %q:\n%s", tt.wantErr, out)
			}
			for _, n := range []string{"c1", "Bad_Name"} {
				if err := hubC.Get(ctx, types.NamespacedName{Name: n}, &flv1.MemberCluster{}); !apierrors.IsNotFound(err) {
					t.Errorf("MemberCluster %s left behind: %v", n, err)
				}
			}
			if _, err := memberClient(t, fresh).CoreV1().Secrets(agent.SystemNamespace).Get(ctx, agent.CredentialsSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("credentials Secret left on the member: %v", err)
			}
			if _, err := memberClient(t, fresh).RbacV1().ClusterRoles().Get(ctx, "flotilla-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("agent ClusterRole left on the member: %v", err)
			}
		})
	}
	// The existing cluster is untouched by the failed duplicate join.
	if c := readyCondition(t, existing); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("%s not Ready after the bad joins: %+v", existing, c)
	}
}
