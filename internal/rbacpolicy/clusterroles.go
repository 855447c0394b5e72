package rbacpolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels that aggregate a role into admin, edit and view.
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// ClusterRoles returns every ClusterRole of the policy: upstream's
// bootstrap cluster roles, the system:controller:* roles of the controllers
// orch runs, and orch's own. Each call returns fresh objects.
func ClusterRoles() []rbacv1.ClusterRole {
	return slices.Concat(upstreamClusterRoles(), controllerClusterRoles(), orchClusterRoles())
}

// upstreamClusterRoles are upstream's bootstrap cluster roles at the 1.37
// level (its defaults, without alpha or beta feature gates).
func upstreamClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin",
			verbs("*").groups("*").resources("*"),
			verbs("*").urls("*"),
		),
		clusterRole("system:discovery",
			verbs("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"),
		),
		clusterRole("system:monitoring",
			verbs("get").urls("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
				"/livez/*", "/readyz/*", "/healthz/*"),
		),
		clusterRole("system:basic-user",
			verbs("create").groups(authz).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			verbs("create").groups(authn).resources("selfsubjectreviews"),
		),
		clusterRole("system:public-info-viewer",
			verbs("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/"),
		),
		aggregatedRole("admin", AggregateToAdmin, nil),
		aggregatedRole("edit", AggregateToEdit, map[string]string{AggregateToAdmin: "true"}),
		aggregatedRole("view", AggregateToView, map[string]string{AggregateToEdit: "true"}),
		aggregateSource("system:aggregate-to-admin", AggregateToAdmin, aggregateToAdmin()...),
		aggregateSource("system:aggregate-to-edit", AggregateToEdit, aggregateToEdit()...),
		aggregateSource("system:aggregate-to-view", AggregateToView, aggregateToView()...),
		clusterRole("system:heapster",
			verbs(read...).groups(core).resources("events", "pods", "nodes", "namespaces"),
			verbs(read...).groups(extensions).resources("deployments"),
		),
		clusterRole("system:node", nodeRules()...),
		clusterRole("system:node-problem-detector",
			verbs("get").groups(core).resources("nodes"),
			verbs("patch").groups(core).resources("nodes/status"),
			eventsRule(),
		),
		clusterRole("system:kubelet-api-admin",
			verbs(read...).groups(core).resources("nodes"),
			verbs("proxy").groups(core).resources("nodes"),
			verbs("*").groups(core).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"),
			// KubeletFineGrainedAuthz is GA since 1.36: the kubelet asks
			// for these first (falling back to nodes/proxy).
			verbs("*").groups(core).resources("nodes/pods", "nodes/healthz", "nodes/configz"),
		),
		clusterRole("system:node-bootstrapper",
			verbs("create", "get", "list", "watch").groups(certificates).resources("certificatesigningrequests"),
		),
		clusterRole("system:auth-delegator",
			verbs("create").groups(authn).resources("tokenreviews"),
			verbs("create").groups(authz).resources("subjectaccessreviews"),
		),
		clusterRole("system:kube-aggregator",
			verbs(read...).groups(core).resources("services", "endpoints"),
		),
		clusterRole("system:kube-controller-manager", kubeControllerManagerRules()...),
		clusterRole("system:kube-dns",
			verbs("list", "watch").groups(core).resources("endpoints", "services"),
		),
		clusterRole("system:persistent-volume-provisioner",
			verbs("get", "list", "watch", "create", "delete").groups(core).resources("persistentvolumes"),
			verbs("get", "list", "watch", "update").groups(core).resources("persistentvolumeclaims"),
			verbs(read...).groups(storage).resources("storageclasses"),
			verbs("watch").groups(core).resources("events"),
			eventsRule(),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			verbs("create").groups(certificates).resources("certificatesigningrequests/nodeclient"),
		),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			verbs("create").groups(certificates).resources("certificatesigningrequests/selfnodeclient"),
		),
		clusterRole("system:volume-scheduler",
			verbs("get", "list", "watch", "update", "patch").groups(core).resources("persistentvolumes"),
			verbs(read...).groups(storage).resources("storageclasses"),
			verbs("get", "list", "watch", "update", "patch").groups(core).resources("persistentvolumeclaims"),
		),
		clusterRole("system:certificates.k8s.io:legacy-unknown-approver", approveSigner("kubernetes.io/legacy-unknown")),
		clusterRole("system:certificates.k8s.io:kubelet-serving-approver", approveSigner("kubernetes.io/kubelet-serving")),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-approver", approveSigner("kubernetes.io/kube-apiserver-client")),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", approveSigner("kubernetes.io/kube-apiserver-client-kubelet")),
		clusterRole("system:service-account-issuer-discovery",
			verbs("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/"),
		),
		clusterRole("system:node-proxier",
			verbs("list", "watch").groups(core).resources("services", "endpoints"),
			verbs(read...).groups(core).resources("nodes"),
			eventsRule(),
			verbs("list", "watch").groups(discovery).resources("endpointslices"),
			// MultiCIDRServiceAllocator is GA since 1.33.
			verbs("list", "watch").groups(networking).resources("servicecidrs"),
		),
		clusterRole("system:kube-scheduler", kubeSchedulerRules()...),
		clusterRole("system:cluster-trust-bundle-discovery", verbs(read...).groups(certificates).resources("clustertrustbundles")),
	}
	return roles
}

// aggregatedRole is a role whose rules the clusterrole aggregation
// controller fills from the roles labelled selector=true.
func aggregatedRole(name, selector string, labels map[string]string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta("", name, labels),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{selector: "true"}},
		}}}
}

// aggregateSource is a role aggregated into the role that selects label.
func aggregateSource(name, label string, rs ...rule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta("", name, map[string]string{label: "true"}), Rules: policyRules(rs)}
}

func approveSigner(signer string) rule {
	return verbs("approve").groups(certificates).resources("signers").names(signer)
}

func aggregateToAdmin() []rule {
	return []rule{
		verbs("create").groups(authz).resources("localsubjectaccessreviews"),
		verbs(readWrite...).groups(rbacGroup).resources("roles", "rolebindings"),
	}
}

func aggregateToEdit() []rule {
	return []rule{
		// Reading these escalates (secrets, exec into pods), so view lacks them.
		verbs(read...).groups(core).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
		verbs("impersonate").groups(core).resources("serviceaccounts"),
		verbs(write...).groups(core).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		verbs("create").groups(core).resources("pods/eviction"),
		verbs(write...).groups(core).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"),
		verbs("create").groups(core).resources("serviceaccounts/token"),
		verbs(write...).groups(apps).resources("statefulsets", "statefulsets/scale", "daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
		verbs(write...).groups(autoscaling).resources("horizontalpodautoscalers"),
		verbs(write...).groups(batch).resources("jobs", "cronjobs"),
		verbs(write...).groups(extensions).resources("daemonsets", "deployments", "deployments/scale", "deployments/rollback",
			"ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
		verbs(write...).groups(policyGroup).resources("poddisruptionbudgets"),
		verbs(write...).groups(networking).resources("networkpolicies", "ingresses"),
		verbs(readWrite...).groups(coordination).resources("leases"),
		verbs(write...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates"),
	}
}

func aggregateToView() []rule {
	return []rule{
		verbs(read...).groups(core).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		verbs(read...).groups(core).resources("limitranges", "resourcequotas", "bindings", "events",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		// Reading namespaces at namespace scope reads that namespace only.
		verbs(read...).groups(core).resources("namespaces"),
		verbs(read...).groups(discovery).resources("endpointslices"),
		verbs(read...).groups(apps).resources("controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale"),
		verbs(read...).groups(autoscaling).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		verbs(read...).groups(batch).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status"),
		verbs(read...).groups(extensions).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status",
			"replicationcontrollers/scale", "networkpolicies"),
		verbs(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status"),
		verbs(read...).groups(networking).resources("ingresses", "ingresses/status", "networkpolicies"),
		verbs(read...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// nodeRules are what a kubelet may do; the Node authorizer and the
// NodeRestriction admission narrow them to its own node.
func nodeRules() []rule {
	return []rule{
		verbs("create").groups(authn).resources("tokenreviews"),
		verbs("create").groups(authz).resources("subjectaccessreviews", "localsubjectaccessreviews"),
		verbs(read...).groups(core).resources("services"),
		verbs("create", "get", "list", "watch").groups(core).resources("nodes"),
		verbs("update", "patch").groups(core).resources("nodes/status"),
		verbs("update", "patch").groups(core).resources("nodes"),
		verbs("create", "update", "patch").groups(core).resources("events"),
		verbs(read...).groups(core).resources("pods"),
		verbs("create", "delete").groups(core).resources("pods"),
		verbs("update", "patch").groups(core).resources("pods/status"),
		verbs("create").groups(core).resources("pods/eviction"),
		verbs("get", "list", "watch").groups(core).resources("secrets", "configmaps"),
		verbs("get").groups(core).resources("persistentvolumeclaims", "persistentvolumes"),
		verbs("get").groups(core).resources("endpoints"),
		verbs("create", "get", "list", "watch").groups(certificates).resources("certificatesigningrequests"),
		verbs("get", "create", "update", "patch", "delete").groups(coordination).resources("leases"),
		verbs("get").groups(storage).resources("volumeattachments"),
		verbs("create").groups(core).resources("serviceaccounts/token"),
		verbs("get", "update", "patch").groups(core).resources("persistentvolumeclaims/status"),
		verbs("get", "watch", "list").groups(storage).resources("csidrivers"),
		verbs("get", "create", "update", "patch", "delete").groups(storage).resources("csinodes"),
		verbs(read...).groups(nodeGroup).resources("runtimeclasses"),
		verbs("get").groups(resourceGroup).resources("resourceclaims"),
		verbs("deletecollection").groups(resourceGroup).resources("resourceslices"),
		verbs(read...).groups(certificates).resources("clustertrustbundles"),
		verbs("get", "list", "watch", "create").groups(certificates).resources("podcertificaterequests"),
	}
}

func kubeControllerManagerRules() []rule {
	return []rule{
		eventsRule(),
		// Leader election.
		verbs("create").groups(coordination).resources("leases"),
		verbs("get", "update").groups(coordination).resources("leases").names("kube-controller-manager"),
		// The service accounts and tokens of the controllers.
		verbs("create").groups(core).resources("secrets", "serviceaccounts"),
		verbs("delete").groups(core).resources("secrets"),
		verbs("get").groups(core).resources("namespaces", "secrets", "serviceaccounts", "configmaps"),
		verbs("update").groups(core).resources("secrets", "serviceaccounts"),
		// Delegated authentication and authorization.
		verbs("create").groups(authn).resources("tokenreviews"),
		verbs("create").groups(authz).resources("subjectaccessreviews"),
		// The shared informers.
		verbs("list", "watch").groups("*").resources("*"),
		verbs("create").groups(core).resources("serviceaccounts/token"),
	}
}

func kubeSchedulerRules() []rule {
	return []rule{
		eventsRule(),
		// Leader election.
		verbs("create").groups(coordination).resources("leases"),
		verbs("get", "update", "list", "watch").groups(coordination).resources("leases").names("kube-scheduler"),
		verbs(readWrite...).groups(coordination).resources("leasecandidates"),
		// Scheduling.
		verbs(read...).groups(core).resources("nodes"),
		verbs("get", "list", "watch", "delete").groups(core).resources("pods"),
		verbs("create").groups(core).resources("pods/binding", "bindings"),
		verbs("patch", "update").groups(core).resources("pods/status"),
		verbs(read...).groups(core).resources("replicationcontrollers", "services"),
		verbs(read...).groups(apps, extensions).resources("replicasets"),
		verbs(read...).groups(apps).resources("statefulsets"),
		verbs(read...).groups(policyGroup).resources("poddisruptionbudgets"),
		verbs(read...).groups(core).resources("persistentvolumeclaims", "persistentvolumes"),
		// Delegated authentication and authorization.
		verbs("create").groups(authn).resources("tokenreviews"),
		verbs("create").groups(authz).resources("subjectaccessreviews"),
		verbs(read...).groups(storage).resources("csinodes"),
		verbs(read...).groups(storage).resources("volumeattachments"),
		verbs(read...).groups(core).resources("namespaces"),
		verbs(read...).groups(storage).resources("csidrivers"),
		verbs(read...).groups(storage).resources("csistoragecapacities"),
		// Dynamic resource allocation.
		verbs(read...).groups(resourceGroup).resources("deviceclasses"),
		verbs("get", "list", "watch", "update", "patch").groups(resourceGroup).resources("resourceclaims"),
		verbs("get", "list", "watch", "update", "patch").groups(resourceGroup).resources("resourceclaims/status"),
		verbs("get", "list", "watch", "update", "patch").groups(core).resources("pods/finalizers"),
		verbs(read...).groups(resourceGroup).resources("resourceslices"),
		// orch: the scheduler watches PriorityClasses to fill a pod's
		// priority from its class when admission has not (internal/scheduler
		// withPriority); upstream's reads pods' spec.priority only.
		verbs(read...).groups(scheduling).resources("priorityclasses"),
	}
}
