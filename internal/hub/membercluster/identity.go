package membercluster

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	flv1 "flotilla.dev/flotilla/api/v1alpha1"
)

// The agent's identity on the hub, least privilege:
//   - in its own namespace cluster-<name>: its heartbeat Lease, its MemberClusterReport,
//     Events, its Works (read, and their status), and a new token for its own
//     ServiceAccount (rotation); no Secrets;
//   - in flotilla-content: get (never list) content chunks, by names only its Works reveal.
// Nothing else: nothing cluster-scoped (not even its own MemberCluster: the hub copies the
// report into it), not another cluster's namespace, not any Secret. Only namespaced grants
// also keep the hub's API server fast: its RBAC authorizer scans every ClusterRoleBinding
// on every request, so one per cluster made each request cost O(fleet size).

// ContentRoleBindingName is the cluster's RoleBinding in the content namespace.
func ContentRoleBindingName(cluster string) string { return "flotilla-agent-" + cluster }

// AgentRoleName is the Role of the agent in its hub namespace.
const AgentRoleName = "flotilla-agent"

func ownerRef(mc *flv1.MemberCluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(flv1.GroupVersion.String()).WithKind("MemberCluster").
		WithName(mc.Name).WithUID(mc.UID)
}

func labels(mc *flv1.MemberCluster) map[string]string {
	return map[string]string{flv1.LabelCluster: mc.Name, "app.kubernetes.io/managed-by": "flotilla"}
}

func desiredNamespace(mc *flv1.MemberCluster) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(flv1.ClusterNamespace(mc.Name)).WithLabels(labels(mc)).WithOwnerReferences(ownerRef(mc))
}

func desiredServiceAccount(mc *flv1.MemberCluster) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(flv1.AgentServiceAccount, flv1.ClusterNamespace(mc.Name)).
		WithLabels(labels(mc)).WithOwnerReferences(ownerRef(mc))
}

func agentSubject(mc *flv1.MemberCluster) *rbacv1ac.SubjectApplyConfiguration {
	return rbacv1ac.Subject().WithKind("ServiceAccount").WithName(flv1.AgentServiceAccount).
		WithNamespace(flv1.ClusterNamespace(mc.Name))
}

func desiredRole(mc *flv1.MemberCluster) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(AgentRoleName, flv1.ClusterNamespace(mc.Name)).
		WithLabels(labels(mc)).WithOwnerReferences(ownerRef(mc)).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("coordination.k8s.io").WithResources("leases").
				WithVerbs("get", "list", "watch", "create", "update", "patch"),
			rbacv1ac.PolicyRule().WithAPIGroups("", "events.k8s.io").WithResources("events").
				WithVerbs("create", "patch"),
			rbacv1ac.PolicyRule().WithAPIGroups(flv1.GroupVersion.Group).WithResources("works").
				WithVerbs("get", "list", "watch"),
			rbacv1ac.PolicyRule().WithAPIGroups(flv1.GroupVersion.Group).WithResources("works/status").
				WithVerbs("get", "update", "patch"),
			// Create cannot be limited by name; get, update and patch can. The hub reads only
			// the report named after the cluster.
			rbacv1ac.PolicyRule().WithAPIGroups(flv1.GroupVersion.Group).WithResources("memberclusterreports").
				WithVerbs("create"),
			rbacv1ac.PolicyRule().WithAPIGroups(flv1.GroupVersion.Group).WithResources("memberclusterreports").
				WithResourceNames(mc.Name).WithVerbs("get", "update", "patch"),
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("serviceaccounts/token").
				WithResourceNames(flv1.AgentServiceAccount).WithVerbs("create"),
		)
}

func desiredRoleBinding(mc *flv1.MemberCluster) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(AgentRoleName, flv1.ClusterNamespace(mc.Name)).
		WithLabels(labels(mc)).WithOwnerReferences(ownerRef(mc)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(AgentRoleName)).
		WithSubjects(agentSubject(mc))
}

// ContentReaderRole is the Role in the content namespace that lets agents get a content
// chunk by name. There is no list or watch: chunk names are derived from the content hash
// with a hub secret, so an agent can read only the chunks its own Works name.
const ContentReaderRole = "flotilla-agent-content"

// DesiredContentReaderRole is the shared Role every cluster's content RoleBinding refers to.
func DesiredContentReaderRole() *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(ContentReaderRole, flv1.ContentNamespace).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": "flotilla"}).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups(flv1.GroupVersion.Group).WithResources("contentchunks").WithVerbs("get"))
}

func desiredContentRoleBinding(mc *flv1.MemberCluster) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(ContentRoleBindingName(mc.Name), flv1.ContentNamespace).
		WithLabels(labels(mc)).WithOwnerReferences(ownerRef(mc)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(ContentReaderRole)).
		WithSubjects(agentSubject(mc))
}
