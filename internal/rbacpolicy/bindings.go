package rbacpolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterRoleBindings returns every ClusterRoleBinding of the policy:
// upstream's, the controllers', and orch's identities'.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return slices.Concat(upstreamClusterRoleBindings(), controllerClusterRoleBindings(), orchClusterRoleBindings())
}

// Roles returns every namespaced Role of the policy (in kube-system and
// kube-public).
func Roles() []rbacv1.Role {
	return slices.Concat(upstreamRoles(), controllerRoles(), orchRoles())
}

// RoleBindings returns every namespaced RoleBinding of the policy.
func RoleBindings() []rbacv1.RoleBinding {
	return slices.Concat(upstreamRoleBindings(), controllerRoleBindings(), orchRoleBindings())
}

func upstreamClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", groups(mastersGroup)),
		clusterBinding("system:monitoring", groups(monitoringGroup)),
		clusterBinding("system:discovery", groups(authenticatedGroup)),
		clusterBinding("system:basic-user", groups(authenticatedGroup)),
		clusterBinding("system:public-info-viewer", groups(authenticatedGroup, unauthenticatedGroup)),
		// Upstream binds no one: kubelets get system:node's powers from the
		// Node authorizer, which limits them to their own node.
		clusterBinding("system:node"),
		clusterBinding("system:node-proxier", users(ProxyUser)),
		clusterBinding("system:kube-controller-manager", users(ControllerManagerUser)),
		clusterBinding("system:kube-dns", []rbacv1.Subject{serviceAccount(metav1.NamespaceSystem, "kube-dns")}),
		clusterBinding("system:kube-scheduler", users(SchedulerUser)),
		clusterBinding("system:volume-scheduler", users(SchedulerUser)),
		clusterBinding("system:service-account-issuer-discovery", groups(serviceAccountsGroup)),
		clusterBinding("system:cluster-trust-bundle-discovery", groups(serviceAccountsGroup)),
	}
}

// upstreamRoles are upstream's namespaced roles of kube-system and
// kube-public.
func upstreamRoles() []rbacv1.Role {
	system, public := metav1.NamespaceSystem, metav1.NamespacePublic
	leaderLocking := []rule{
		verbs("watch", "get", "list", "create", "update").groups(coordination).resources("leases"),
		verbs("watch", "get", "list", "create", "update").groups(coordination).resources("leasecandidates"),
	}
	return []rbacv1.Role{
		role(system, "extension-apiserver-authentication-reader",
			verbs("get", "list", "watch").groups(core).resources("configmaps").names("extension-apiserver-authentication"),
		),
		role(system, "system::leader-locking-kube-controller-manager", leaderLocking...),
		role(system, "system::leader-locking-kube-scheduler", leaderLocking...),
		role(system, ControllerRoleName("bootstrap-signer"),
			verbs(read...).groups(core).resources("secrets"),
		),
		role(system, ControllerRoleName("cloud-provider"),
			verbs("create", "get", "list", "watch").groups(core).resources("configmaps"),
		),
		role(system, ControllerRoleName("token-cleaner"),
			verbs("delete", "get", "list", "watch").groups(core).resources("secrets"),
			eventsRule(),
		),
		role(public, ControllerRoleName("bootstrap-signer"),
			verbs(read...).groups(core).resources("configmaps"),
			verbs("update").groups(core).resources("configmaps").names("cluster-info"),
			eventsRule(),
		),
	}
}

func upstreamRoleBindings() []rbacv1.RoleBinding {
	system, public := metav1.NamespaceSystem, metav1.NamespacePublic
	sa := func(name string) []rbacv1.Subject { return []rbacv1.Subject{serviceAccount(system, name)} }
	return []rbacv1.RoleBinding{
		roleBinding(system, "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
			users(ControllerManagerUser, SchedulerUser)),
		roleBinding(system, "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
			users(ControllerManagerUser), sa("kube-controller-manager"), sa("leader-election-controller")),
		roleBinding(system, "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
			users(SchedulerUser), sa("kube-scheduler")),
		roleBinding(system, ControllerRoleName("bootstrap-signer"), ControllerRoleName("bootstrap-signer"), sa("bootstrap-signer")),
		roleBinding(system, ControllerRoleName("cloud-provider"), ControllerRoleName("cloud-provider"), sa("cloud-provider")),
		roleBinding(system, ControllerRoleName("token-cleaner"), ControllerRoleName("token-cleaner"), sa("token-cleaner")),
		roleBinding(public, ControllerRoleName("bootstrap-signer"), ControllerRoleName("bootstrap-signer"), sa("bootstrap-signer")),
	}
}
