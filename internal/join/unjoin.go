package join

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
	"flotilla.dev/flotilla/internal/hub"
)

// UnjoinOptions of an unjoin.
type UnjoinOptions struct {
	Name string
	Hub  *rest.Config
	// MemberKubeconfig lets unjoin remove the agent from the member. Default: the one
	// recorded by `join --local`; without either, only the hub side is removed.
	MemberKubeconfig string
	MemberContext    string
	StateDir         string
	Out              io.Writer
}

// Unjoin revokes the cluster's hub credentials (the hub deletes the agent's ServiceAccount,
// which invalidates every token issued for it, before the MemberCluster disappears), stops a
// local agent and removes the agent's objects from the member.
func Unjoin(ctx context.Context, o UnjoinOptions) error {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir()
	}
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	hc, err := client.New(o.Hub, client.Options{Scheme: hub.Scheme()})
	if err != nil {
		return err
	}
	local, _ := LoadLocalAgent(o.StateDir, o.Name)
	if o.MemberKubeconfig == "" && local != nil {
		o.MemberKubeconfig = local.MemberKubeconfig
	}
	found := true
	step(o.Out, "revoking the hub credentials of %s", o.Name)
	if err := deleteMemberCluster(ctx, hc, o.Name, &found); err != nil {
		return err
	}
	if stopped, err := StopLocalAgent(o.StateDir, o.Name, true); err != nil {
		return err
	} else if stopped {
		step(o.Out, "stopped the local agent (pid %d)", local.Pid)
	}
	if o.MemberKubeconfig == "" {
		if !found {
			return fmt.Errorf("no cluster named %q in the fleet", o.Name)
		}
		fmt.Fprintf(o.Out, "  ! no --member-kubeconfig: the agent's objects stay on the member (namespace flotilla-system); its credentials no longer work\n")
		return nil
	}
	cfg, err := LoadMemberConfig(o.MemberKubeconfig, o.MemberContext)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	step(o.Out, "removing the agent from the member")
	if err := removeFromMember(ctx, cs); err != nil {
		return err
	}
	if !found {
		fmt.Fprintf(o.Out, "  ! the hub had no cluster named %q; removed the agent from the member only\n", o.Name)
	}
	return nil
}

// deleteMemberCluster deletes a MemberCluster and waits until the hub has revoked its
// credentials and released it. found reports whether it existed.
func deleteMemberCluster(ctx context.Context, hc client.Client, name string, found *bool) error {
	mc := &flv1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := hc.Delete(ctx, mc); err != nil {
		if apierrors.IsNotFound(err) {
			if found != nil {
				*found = false
			}
			return nil
		}
		return fmt.Errorf("delete MemberCluster %s: %w", name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := hc.Get(ctx, types.NamespacedName{Name: name}, &flv1.MemberCluster{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("MemberCluster %s is still being deleted after a minute: is `flotilla hub` running? (it revokes the credentials and removes the finalizer %s)",
			name, flv1.MemberClusterFinalizer)
	}
	return nil
}
