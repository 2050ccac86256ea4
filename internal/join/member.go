package join

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"flotilla.dev/flotilla/internal/agent"
)

// What join installs on a member cluster, all in namespace flotilla-system (plus one
// ClusterRole and its binding): the hub credentials Secret, the agent's ServiceAccount and
// RBAC, and unless the agent runs locally, its Deployment.
const (
	memberFieldOwner = "flotilla-join"
	agentName        = "flotilla-agent"
)

var managedBy = map[string]string{"app.kubernetes.io/managed-by": "flotilla", "app.kubernetes.io/name": agentName}

func applyOpts() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: memberFieldOwner, Force: true}
}

// installOnMember applies the agent's objects. Every step is idempotent.
func installOnMember(ctx context.Context, cs kubernetes.Interface, creds *agent.Credentials, image string, deploy bool, args []string) error {
	ns := agent.SystemNamespace
	if err := waitNamespaceGone(ctx, cs, ns); err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace(ns).WithLabels(managedBy), applyOpts()); err != nil {
		return fmt.Errorf("create namespace %s on the member: %w", ns, err)
	}
	sec := agent.CredentialsSecretObject(creds)
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{FieldManager: memberFieldOwner}); err != nil {
		return fmt.Errorf("store hub credentials on the member: %w", err)
	}
	steps := []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Apply(ctx, corev1ac.ServiceAccount(agentName, ns).WithLabels(managedBy), applyOpts())
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoles().Apply(ctx, rbacv1ac.ClusterRole(agentName).WithLabels(managedBy).WithRules(
				// The agent delivers whatever its Bundles hold (CRDs, RBAC, workloads): like
				// any delivery controller it needs full access to its own cluster.
				rbacv1ac.PolicyRule().WithAPIGroups("*").WithResources("*").WithVerbs("*"),
				rbacv1ac.PolicyRule().WithNonResourceURLs("*").WithVerbs("*"),
			), applyOpts())
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(agentName).WithLabels(managedBy).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(agentName)).
				WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName(agentName).WithNamespace(ns)), applyOpts())
			return err
		},
		func() error {
			_, err := cs.RbacV1().Roles(ns).Apply(ctx, rbacv1ac.Role(agentName, ns).WithLabels(managedBy).WithRules(
				rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").WithResourceNames(agent.CredentialsSecret).
					WithVerbs("get", "update", "patch"),
			), applyOpts())
			return err
		},
		func() error {
			_, err := cs.RbacV1().RoleBindings(ns).Apply(ctx, rbacv1ac.RoleBinding(agentName, ns).WithLabels(managedBy).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(agentName)).
				WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName(agentName).WithNamespace(ns)), applyOpts())
			return err
		},
	}
	if deploy {
		steps = append(steps, func() error {
			_, err := cs.AppsV1().Deployments(ns).Apply(ctx, agentDeployment(image, args), applyOpts())
			return err
		})
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("install the agent on the member: %w", err)
		}
	}
	return nil
}

func agentDeployment(image string, args []string) *appsv1ac.DeploymentApplyConfiguration {
	sel := map[string]string{"app.kubernetes.io/name": agentName}
	return appsv1ac.Deployment(agentName, agent.SystemNamespace).WithLabels(managedBy).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(sel)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(managedBy).
				WithSpec(corev1ac.PodSpec().WithServiceAccountName(agentName).
					WithContainers(corev1ac.Container().WithName("agent").WithImage(image).
						WithArgs(append([]string{"agent"}, args...)...).
						WithResources(corev1ac.ResourceRequirements().
							WithRequests(resourceList("10m", "32Mi")).WithLimits(resourceList("", "128Mi"))).
						WithSecurityContext(corev1ac.SecurityContext().WithRunAsNonRoot(true).
							WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true))))))
}

// removeFromMember deletes what installOnMember created; missing objects are fine.
func removeFromMember(ctx context.Context, cs kubernetes.Interface) error {
	ns := agent.SystemNamespace
	dels := []func() error{
		func() error { return cs.AppsV1().Deployments(ns).Delete(ctx, agentName, metav1.DeleteOptions{}) },
		func() error {
			return cs.CoreV1().Secrets(ns).Delete(ctx, agent.CredentialsSecret, metav1.DeleteOptions{})
		},
		func() error { return cs.RbacV1().ClusterRoleBindings().Delete(ctx, agentName, metav1.DeleteOptions{}) },
		func() error { return cs.RbacV1().ClusterRoles().Delete(ctx, agentName, metav1.DeleteOptions{}) },
		func() error { return cs.RbacV1().RoleBindings(ns).Delete(ctx, agentName, metav1.DeleteOptions{}) },
		func() error { return cs.RbacV1().Roles(ns).Delete(ctx, agentName, metav1.DeleteOptions{}) },
		func() error { return cs.CoreV1().ServiceAccounts(ns).Delete(ctx, agentName, metav1.DeleteOptions{}) },
	}
	for _, d := range dels {
		if err := d(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove the agent from the member: %w", err)
		}
	}
	// The namespace goes only if join made it (it carries our managed-by label).
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil && n.Labels["app.kubernetes.io/managed-by"] == "flotilla" {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove namespace %s from the member: %w", ns, err)
		}
	}
	return nil
}

// waitNamespaceGone waits while a namespace is terminating (a recent unjoin), since
// nothing can be created in it until it is gone.
func waitNamespaceGone(ctx context.Context, cs kubernetes.Interface, ns string) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return n.DeletionTimestamp.IsZero(), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s on the member is still terminating from an earlier unjoin: %w", ns, err)
	}
	return nil
}
