package rbacpolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// orchLeaderLocking is the Role (and RoleBinding) of kube-system that lets
// the controller manager hold ControllerManagerLease.
const orchLeaderLocking = "system::leader-locking-orch-controller-manager"

// apiserverEndpoints is the Role (and RoleBinding) of namespace default
// that lets nodes read the default/kubernetes Endpoints.
const apiserverEndpoints = "system:orch:apiserver-endpoints"

// nodeClientRenewal is the ClusterRoleBinding that lets nodes have the
// renewal of their own client certificate approved automatically.
const nodeClientRenewal = "system:orch:node-client-certificate-renewal"

// orchClusterRoles are the ClusterRoles of orch's own identities.
func orchClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole(DNSUser,
			// The agent's cluster DNS answers from informers on Services
			// and EndpointSlices (internal/dns).
			verbs("list", "watch").groups(core).resources("services"),
			verbs("list", "watch").groups(discovery).resources("endpointslices"),
		),
		clusterRole(NetworkUser,
			// The agent's routes to other nodes' pod CIDRs follow every
			// Node (internal/network/routes.go).
			verbs("get", "list", "watch").groups(core).resources("nodes"),
			// Its network policy enforcement follows the policies and
			// the pods and namespaces they select (internal/netpol).
			verbs("list", "watch").groups(core).resources("pods", "namespaces"),
			verbs("list", "watch").groups(networking).resources("networkpolicies"),
		),
		clusterRole(IngressUser,
			// The agent's Ingress controller routes by Ingresses and
			// their classes to Services' endpoints, and serves the
			// certificates of TLS Secrets (internal/ingress).
			verbs("list", "watch").groups(networking).resources("ingresses", "ingressclasses"),
			verbs("list", "watch").groups(core).resources("services", "secrets"),
			verbs("list", "watch").groups(discovery).resources("endpointslices"),
			// And by Gateway API's Gateways and HTTPRoutes, whose
			// listeners may take routes by namespace label.
			verbs("list", "watch").groups(gatewayGroup).resources("gatewayclasses", "gateways", "httproutes", "referencegrants"),
			verbs("list", "watch").groups(core).resources("namespaces"),
		),
		clusterRole(LocalPathUser,
			// Each agent follows its node's local-path volumes, removes
			// the directory of a released one, then deletes it and takes
			// its finalizer off (internal/localpath's Cleaner).
			verbs("get", "list", "watch", "update", "delete").groups(core).resources("persistentvolumes"),
		),
	}
}

func orchClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding(DNSUser, users(DNSUser)),
		clusterBinding(NetworkUser, users(NetworkUser)),
		clusterBinding(IngressUser, users(IngressUser)),
		clusterBinding(LocalPathUser, users(LocalPathUser)),
		// The manifests directory is the administrator's: anything in it
		// is applied.
		namedClusterBinding(ManifestsUser, "cluster-admin", users(ManifestsUser)),
		// logs, exec, port-forward and metrics through the apiserver.
		namedClusterBinding(KubeletClientUser, "system:kubelet-api-admin", users(KubeletClientUser)),
		// An agent whose join token the server no longer accepts renews
		// its kubelet client certificate through a
		// CertificateSigningRequest, as the node (internal/join's
		// Renewer); the certificates controller approves a node's request
		// for itself only when its requester may create
		// certificatesigningrequests/selfnodeclient. Upstream binds the
		// role to no one; kubeadm binds it to system:nodes, as here.
		namedClusterBinding(nodeClientRenewal, "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", groups(nodesGroup)),
	}
}

// orchRoles: upstream's system::leader-locking-kube-controller-manager
// already lets ControllerManagerUser write every lease of kube-system; this
// Role states what orch's leader election needs by name, so that it stays
// when a cluster narrows upstream's.
func orchRoles() []rbacv1.Role {
	return []rbacv1.Role{
		// Every agent follows the servers' addresses in the
		// default/kubernetes Endpoints (internal/join/servers.go) under its
		// node identity, to reach another server when one goes away.
		role(metav1.NamespaceDefault, apiserverEndpoints,
			verbs("get", "list", "watch").groups(core).resources("endpoints").names("kubernetes"),
		),
		role(ControllerNamespace, orchLeaderLocking,
			verbs("create").groups(coordination).resources("leases"),
			verbs("get", "update").groups(coordination).resources("leases").names(ControllerManagerLease),
		),
	}
}

func orchRoleBindings() []rbacv1.RoleBinding {
	return []rbacv1.RoleBinding{
		roleBinding(metav1.NamespaceDefault, apiserverEndpoints, apiserverEndpoints, groups(nodesGroup)),
		roleBinding(ControllerNamespace, orchLeaderLocking, orchLeaderLocking, users(ControllerManagerUser)),
	}
}

// namedClusterBinding binds ClusterRole roleName under its own name.
func namedClusterBinding(name, roleName string, subjects []rbacv1.Subject) rbacv1.ClusterRoleBinding {
	b := clusterBinding(name, subjects)
	b.RoleRef.Name = roleName
	return b
}
