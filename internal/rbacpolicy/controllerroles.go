package rbacpolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// controllerRole is the ClusterRole system:controller:SA.
func controllerRole(sa string, rs ...rule) rbacv1.ClusterRole {
	return clusterRole(ControllerRoleName(sa), rs...)
}

// controllerClusterRoles are the system:controller:* ClusterRoles of the
// controllers orch runs: upstream's rules, plus (marked "orch:") what
// orch's implementation does beyond them. orch's own controllers that only
// touch kube-system have a Role there instead (controllerRoles).
func controllerClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		controllerRole("certificate-controller",
			verbs("get", "list", "watch", "delete").groups(certificates).resources("certificatesigningrequests"),
			verbs("update").groups(certificates).resources("certificatesigningrequests/status", "certificatesigningrequests/approval"),
			verbs("approve").groups(certificates).resources("signers").names("kubernetes.io/kube-apiserver-client-kubelet"),
			verbs("sign").groups(certificates).resources("signers").names("kubernetes.io/kube-apiserver-client",
				"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"),
			verbs("create").groups(authz).resources("subjectaccessreviews"),
			eventsRule(),
		),
		controllerRole("clusterrole-aggregation-controller",
			// escalate: it writes rules it does not hold itself.
			verbs("escalate", "get", "list", "patch", "update", "watch").groups(rbacGroup).resources("clusterroles"),
		),
		controllerRole("cronjob-controller",
			verbs("get", "list", "watch", "update").groups(batch).resources("cronjobs"),
			verbs("get", "list", "watch", "create", "update", "delete", "patch").groups(batch).resources("jobs"),
			verbs("update").groups(batch).resources("cronjobs/status"),
			verbs("update").groups(batch).resources("cronjobs/finalizers"),
			verbs("list", "watch", "delete").groups(core).resources("pods"),
			eventsRule(),
		),
		controllerRole("daemon-set-controller",
			verbs(read...).groups(extensions, apps).resources("daemonsets"),
			verbs("update").groups(extensions, apps).resources("daemonsets/status"),
			verbs("update").groups(extensions, apps).resources("daemonsets/finalizers"),
			verbs("list", "watch").groups(core).resources("nodes"),
			verbs("list", "watch", "create", "delete", "patch").groups(core).resources("pods"),
			verbs("create").groups(core).resources("pods/binding"),
			verbs("get", "list", "watch", "create", "delete", "update", "patch").groups(apps).resources("controllerrevisions"),
			eventsRule(),
		),
		controllerRole("deployment-controller",
			verbs("get", "list", "watch", "update").groups(extensions, apps).resources("deployments"),
			// orch: the controller writes the deployment.kubernetes.io/revision
			// annotation with a merge patch when the status write left it
			// out (internal/controller/deployment writeStatus).
			verbs("patch").groups(extensions, apps).resources("deployments"),
			verbs("update").groups(extensions, apps).resources("deployments/status"),
			verbs("update").groups(extensions, apps).resources("deployments/finalizers"),
			verbs("get", "list", "watch", "create", "update", "patch", "delete").groups(extensions, apps).resources("replicasets"),
			verbs("get", "list", "watch", "update").groups(core).resources("pods"),
			eventsRule(),
		),
		controllerRole("disruption-controller",
			verbs(read...).groups(extensions, apps).resources("deployments"),
			verbs(read...).groups(apps, extensions).resources("replicasets"),
			verbs(read...).groups(core).resources("replicationcontrollers"),
			verbs(read...).groups(policyGroup).resources("poddisruptionbudgets"),
			verbs(read...).groups(apps).resources("statefulsets"),
			verbs("update").groups(policyGroup).resources("poddisruptionbudgets/status"),
			verbs("patch", "update").groups(core).resources("pods/status"),
			verbs("get").groups("*").resources("*/scale"),
			eventsRule(),
		),
		controllerRole("endpoint-controller",
			verbs(read...).groups(core).resources("services", "pods"),
			verbs("get", "list", "watch", "create", "update", "delete").groups(core).resources("endpoints"),
			verbs("create").groups(core).resources("endpoints/restricted"),
			eventsRule(),
		),
		controllerRole("endpointslice-controller",
			verbs(read...).groups(core).resources("services", "pods", "nodes"),
			// Slices are owned by their Service and block its deletion.
			verbs("update").groups(core).resources("services/finalizers"),
			verbs("get", "list", "watch", "create", "update", "delete").groups(discovery).resources("endpointslices"),
			eventsRule(),
		),
		controllerRole("endpointslicemirroring-controller",
			verbs(read...).groups(core).resources("services", "endpoints"),
			// Mirrored slices are owned by their Endpoints and block its
			// deletion (endpoints/finalizers); upstream's role grants
			// services/finalizers too.
			verbs("update").groups(core).resources("services/finalizers"),
			verbs("update").groups(core).resources("endpoints/finalizers"),
			verbs("get", "list", "watch", "create", "update", "delete").groups(discovery).resources("endpointslices"),
			eventsRule(),
		),
		controllerRole("ephemeral-volume-controller",
			verbs(read...).groups(core).resources("pods"),
			verbs("update").groups(core).resources("pods/finalizers"),
			verbs("get", "list", "watch", "create").groups(core).resources("persistentvolumeclaims"),
			eventsRule(),
		),
		controllerRole("generic-garbage-collector",
			// It reads and deletes anything, and rewrites owner references.
			verbs("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*"),
			eventsRule(),
		),
		controllerRole("horizontal-pod-autoscaler",
			verbs(read...).groups(autoscaling).resources("horizontalpodautoscalers"),
			verbs("update").groups(autoscaling).resources("horizontalpodautoscalers/status"),
			verbs("get", "update").groups("*").resources("*/scale"),
			verbs("list", "watch").groups(core).resources("pods"),
			// The resource metrics orch serves, and those metrics adapters serve.
			verbs("list", "watch").groups("metrics.k8s.io").resources("pods"),
			verbs(read...).groups("custom.metrics.k8s.io").resources("*"),
			verbs(read...).groups("external.metrics.k8s.io").resources("*"),
			eventsRule(),
		),
		controllerRole("job-controller",
			verbs("get", "list", "watch", "update", "patch").groups(batch).resources("jobs"),
			verbs("update").groups(batch).resources("jobs/status"),
			verbs("update").groups(batch).resources("jobs/finalizers"),
			verbs("list", "watch", "create", "delete", "patch").groups(core).resources("pods"),
			eventsRule(),
		),
		controllerRole("namespace-controller",
			verbs("get", "list", "watch", "delete").groups(core).resources("namespaces"),
			verbs("update").groups(core).resources("namespaces/finalize", "namespaces/status"),
			verbs("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*"),
		),
		controllerRole("node-controller",
			verbs("get", "list", "watch", "update", "delete", "patch").groups(core).resources("nodes"),
			verbs("patch", "update").groups(core).resources("nodes/status"),
			// Pods on unreachable nodes are marked not ready.
			verbs("patch", "update").groups(core).resources("pods/status"),
			verbs("list", "watch", "get", "delete").groups(core).resources("pods"),
			eventsRule(),
		),
		controllerRole("persistent-volume-binder",
			verbs("get", "list", "watch", "update", "create", "delete").groups(core).resources("persistentvolumes"),
			verbs("update").groups(core).resources("persistentvolumes/status"),
			verbs("get", "list", "watch", "update").groups(core).resources("persistentvolumeclaims"),
			verbs("update").groups(core).resources("persistentvolumeclaims/status"),
			verbs("list", "watch", "get", "create", "delete").groups(core).resources("pods"),
			verbs(read...).groups(storage).resources("storageclasses"),
			verbs("list", "watch").groups(core).resources("nodes"),
			eventsRule(),
			verbs("watch").groups(core).resources("events"),
		),
		controllerRole("pod-garbage-collector",
			verbs("list", "watch", "delete").groups(core).resources("pods"),
			verbs("get", "list", "watch").groups(core).resources("nodes"),
			verbs("patch").groups(core).resources("pods/status"),
		),
		controllerRole("pv-protection-controller",
			verbs("get", "list", "watch", "update").groups(core).resources("persistentvolumes"),
			eventsRule(),
		),
		controllerRole("pvc-protection-controller",
			verbs("get", "list", "watch", "update").groups(core).resources("persistentvolumeclaims"),
			verbs("update").groups(core).resources("persistentvolumeclaims/status"),
			verbs("list", "watch", "get").groups(core).resources("pods"),
			eventsRule(),
		),
		controllerRole("replicaset-controller", slices.Concat([]rule{
			verbs("get", "list", "watch", "update").groups(apps, extensions).resources("replicasets"),
			verbs("update").groups(apps, extensions).resources("replicasets/status"),
			verbs("update").groups(apps, extensions).resources("replicasets/finalizers"),
			verbs("list", "watch", "patch", "create", "delete").groups(core).resources("pods"),
			eventsRule(),
		}, replicationControllerRules())...),
		controllerRole("resourcequota-controller",
			// It counts every kind of object.
			verbs("list", "watch").groups("*").resources("*"),
			verbs("update").groups(core).resources("resourcequotas/status"),
			eventsRule(),
		),
		controllerRole("root-ca-cert-publisher",
			verbs("create", "update").groups(core).resources("configmaps"),
			eventsRule(),
		),
		controllerRole("service-account-controller",
			verbs("create").groups(core).resources("serviceaccounts"),
			eventsRule(),
		),
		controllerRole("statefulset-controller",
			verbs("list", "watch").groups(core).resources("pods"),
			verbs(read...).groups(apps).resources("statefulsets"),
			verbs("update").groups(apps).resources("statefulsets/status"),
			verbs("update").groups(apps).resources("statefulsets/finalizers"),
			verbs("get", "create", "delete", "update", "patch").groups(core).resources("pods"),
			verbs("get", "create", "delete", "update", "patch", "list", "watch").groups(apps).resources("controllerrevisions"),
			verbs("get", "create", "list", "watch").groups(core).resources("persistentvolumeclaims"),
			// The claims' owner references (persistentVolumeClaimRetentionPolicy).
			verbs("update", "delete").groups(core).resources("persistentvolumeclaims"),
			verbs("update").groups(core).resources("pods/finalizers"),
			eventsRule(),
		),
		controllerRole("ttl-after-finished-controller",
			verbs("get", "list", "watch", "delete").groups(batch).resources("jobs"),
			eventsRule(),
		),
		controllerRole("validatingadmissionpolicy-status-controller",
			verbs("get", "list", "watch").groups(admissionRegistration).resources("validatingadmissionpolicies"),
			verbs("get", "patch", "update").groups(admissionRegistration).resources("validatingadmissionpolicies/status"),
		),
		controllerRole("orch-crd-controller",
			// Upstream runs the CRD status controllers inside the apiserver,
			// on its loopback identity; orch's (internal/controller/crd)
			// watches CRDs with its own informer, writes their status, and
			// removes the customresourcecleanup finalizer of a deleted CRD
			// with an update once its custom resources are gone.
			verbs("get", "list", "watch", "update").groups(apiextensions).resources("customresourcedefinitions"),
			verbs("update").groups(apiextensions).resources("customresourcedefinitions/status"),
			// The custom resources of a deleted CRD, whatever its group
			// (as the namespace controller's).
			verbs("list", "delete", "deletecollection").groups("*").resources("*"),
			eventsRule(),
		),
		controllerRole("orch-gateway-controller",
			// It follows Gateway API's objects and the TLS Secrets
			// listeners name with its own informers, and writes their
			// status (internal/controller/gateway); Services, Namespaces
			// and Nodes come from the shared informers.
			verbs("list", "watch").groups(gatewayGroup).resources("gatewayclasses", "gateways", "httproutes", "referencegrants"),
			verbs("update").groups(gatewayGroup).resources("gatewayclasses/status", "gateways/status", "httproutes/status"),
			verbs("list", "watch").groups(core).resources("secrets"),
		),
		controllerRole("orch-local-path-controller",
			// The built-in local-path provisioner
			// (internal/controller/localpath) makes a PersistentVolume for
			// each claim of its classes, on the node the scheduler picked,
			// and grows it and the claim's status when the claim asks for
			// more; its informers are the controller manager's.
			verbs("create", "update").groups(core).resources("persistentvolumes"),
			verbs("update").groups(core).resources("persistentvolumeclaims/status"),
			eventsRule(),
		),
		controllerRole("orch-servicelb-controller",
			// It writes the node addresses into status.loadBalancer; the
			// Services, Nodes and EndpointSlices it reads come from the
			// controller manager's shared informers.
			verbs("update").groups(core).resources("services/status"),
			// And of the built-in Ingress controller's Ingresses.
			verbs("update").groups(networking).resources("ingresses/status"),
		),
	}
}

// replicationControllerRules: orch's replicaset controller also runs the
// ReplicationControllers (internal/controller/replicaset kind.go), which
// upstream gives to replication-controller; these are that role's rules on
// ReplicationControllers.
func replicationControllerRules() []rule {
	return []rule{
		// orch: ReplicationControllers, as upstream's replication-controller.
		verbs("get", "list", "watch", "update").groups(core).resources("replicationcontrollers"),
		verbs("update").groups(core).resources("replicationcontrollers/status"),
		verbs("update").groups(core).resources("replicationcontrollers/finalizers"),
	}
}

// controllerClusterRoleBindings bind each controller's ClusterRole to its
// service account.
func controllerClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, r := range controllerClusterRoles() {
		sa := r.Name[len(controllerPrefix):]
		out = append(out, clusterBinding(r.Name, []rbacv1.Subject{serviceAccount(ControllerNamespace, sa)}))
	}
	return out
}

// controllerRoles are the Roles of orch's controllers that only touch
// objects of kube-system.
func controllerRoles() []rbacv1.Role {
	return []rbacv1.Role{
		role(ControllerNamespace, ControllerRoleName("orch-node-password-controller"),
			// Its own informer watches the labelled password secrets of
			// kube-system; it records the Node's UID on a secret and deletes
			// the secret of a deleted Node (internal/controller/nodepassword).
			verbs("list", "watch", "update", "delete").groups(core).resources("secrets"),
		),
		role(ControllerNamespace, ControllerRoleName("orch-cluster-dns-controller"),
			// It keeps the EndpointSlice kube-system/kube-dns, one endpoint
			// per node (internal/controller/clusterdns).
			verbs("get", "create", "update").groups(discovery).resources("endpointslices"),
		),
	}
}

// controllerRoleBindings bind each controller's Role to its service account.
func controllerRoleBindings() []rbacv1.RoleBinding {
	var out []rbacv1.RoleBinding
	for _, r := range controllerRoles() {
		sa := r.Name[len(controllerPrefix):]
		out = append(out, roleBinding(r.Namespace, r.Name, r.Name, []rbacv1.Subject{serviceAccount(ControllerNamespace, sa)}))
	}
	return out
}
