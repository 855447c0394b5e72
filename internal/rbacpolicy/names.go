package rbacpolicy

// The identities of orch's components.
const (
	// ControllerManagerUser runs the controller manager's shared informers,
	// its event recorder and its leader election (upstream's user, bound to
	// upstream's system:kube-controller-manager role).
	ControllerManagerUser = "system:kube-controller-manager"
	// SchedulerUser is the scheduler (system:kube-scheduler and
	// system:volume-scheduler, as upstream).
	SchedulerUser = "system:kube-scheduler"
	// ProxyUser is the agent's service proxy (system:node-proxier).
	ProxyUser = "system:kube-proxy"
	// DNSUser is the agent's cluster DNS, bound to the ClusterRole of the
	// same name.
	DNSUser = "system:orch-dns"
	// NetworkUser is the agent's pod network, which routes every node's pod
	// CIDR (it watches all Nodes), bound to the ClusterRole of the same name.
	NetworkUser = "system:orch-network"
	// IngressUser is the agent's Ingress controller, bound to the
	// ClusterRole of the same name.
	IngressUser = "system:orch-ingress"
	// LocalPathUser is the agent's clean-up of released local-path
	// volumes (internal/localpath), bound to the ClusterRole of the same
	// name.
	LocalPathUser = "system:orch-local-path"
	// ManifestsUser applies the auto-applied manifests directory; it is
	// bound to cluster-admin, since those manifests may hold anything.
	ManifestsUser = "system:orch-manifests"
	// KubeletClientUser is the apiserver's client certificate to the
	// kubelets, bound to system:kubelet-api-admin.
	KubeletClientUser = "system:kube-apiserver-kubelet-client"
)

// ControllerNamespace holds the controllers' service accounts.
const ControllerNamespace = "kube-system"

// ControllerManagerLease is the Lease (in ControllerNamespace) that the
// controller manager's leader election holds.
const ControllerManagerLease = "orch-controller-manager"

// ControllerServiceAccounts maps the name of each controller orch runs (as
// internal/server names it) to the service account of ControllerNamespace it
// runs as: upstream's name for upstream's controllers, orch-*-controller for
// orch's own. Its role and binding are both named ControllerRoleName(sa).
var ControllerServiceAccounts = map[string]string{
	"nodelifecycle":                    "node-controller",
	"nodeipam":                         "node-controller",
	"podgc":                            "pod-garbage-collector",
	"replicaset":                       "replicaset-controller",
	"deployment":                       "deployment-controller",
	"statefulset":                      "statefulset-controller",
	"daemonset":                        "daemon-set-controller",
	"job":                              "job-controller",
	"cronjob":                          "cronjob-controller",
	"garbagecollector":                 "generic-garbage-collector",
	"namespace":                        "namespace-controller",
	"serviceaccount":                   "service-account-controller",
	"root-ca-cert-publisher":           "root-ca-cert-publisher",
	"resourcequota":                    "resourcequota-controller",
	"ttlafterfinished":                 "ttl-after-finished-controller",
	"endpointslice":                    "endpointslice-controller",
	"endpointslicemirroring":           "endpointslicemirroring-controller",
	"endpoints":                        "endpoint-controller",
	"disruption":                       "disruption-controller",
	"pvbinder":                         "persistent-volume-binder",
	"pvc-protection":                   "pvc-protection-controller",
	"pv-protection":                    "pv-protection-controller",
	"ephemeral-volume":                 "ephemeral-volume-controller",
	"certificates":                     "certificate-controller",
	"horizontalpodautoscaling":         "horizontal-pod-autoscaler",
	"clusterroleaggregation":           "clusterrole-aggregation-controller",
	"nodepassword":                     "orch-node-password-controller",
	"clusterdns":                       "orch-cluster-dns-controller",
	"servicelb":                        "orch-servicelb-controller",
	"crd":                              "orch-crd-controller",
	"local-path":                       "orch-local-path-controller",
	"gateway":                          "orch-gateway-controller",
	"validatingadmissionpolicy-status": "validatingadmissionpolicy-status-controller",
}

// ControllerRoleName is the name of the role (and binding) of the
// controller service account sa: system:controller:SA.
func ControllerRoleName(sa string) string { return controllerPrefix + sa }

// ControllerUser is the user name the apiserver gives service account sa
// of ControllerNamespace: system:serviceaccount:kube-system:SA.
func ControllerUser(sa string) string {
	return "system:serviceaccount:" + ControllerNamespace + ":" + sa
}

const controllerPrefix = "system:controller:"

// Well-known groups the bindings name (as upstream's user package).
const (
	mastersGroup         = "system:masters"
	authenticatedGroup   = "system:authenticated"
	unauthenticatedGroup = "system:unauthenticated"
	serviceAccountsGroup = "system:serviceaccounts"
	monitoringGroup      = "system:monitoring"
	nodesGroup           = "system:nodes"
)

// The metadata of every object of the policy, as upstream's.
const (
	// BootstrappingLabel marks the objects of the bootstrap policy.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// BootstrappingValue is BootstrappingLabel's value.
	BootstrappingValue = "rbac-defaults"
)

// IsComponent reports whether user is one of orch's own components (not a
// kubelet, whose refusals the Node authorizer decides case by case): a
// refusal of such a user means the policy lacks a rule.
func IsComponent(user string) bool {
	switch user {
	case ControllerManagerUser, SchedulerUser, ProxyUser, DNSUser, NetworkUser, IngressUser, ManifestsUser, KubeletClientUser:
		return true
	}
	for _, sa := range ControllerServiceAccounts {
		if user == ControllerUser(sa) {
			return true
		}
	}
	return false
}
