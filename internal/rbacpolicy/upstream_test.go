package rbacpolicy_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"orch/internal/rbacpolicy"
)

// The rules below are transcribed from upstream's testdata
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml
// and controller-roles.yaml), one line per rule, as the yaml lists them.

var (
	get        = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "delete", "deletecollection", "patch", "update"}
	allVerbs   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	events     = rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}}
)

func r(groups []string, resources []string, verbs []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
}

func g(groups ...string) []string    { return groups }
func res(names ...string) []string   { return names }
func verbs(names ...string) []string { return names }

var upstreamRules = map[string][]rbacv1.PolicyRule{
	"system:aggregate-to-admin": {
		r(g("authorization.k8s.io"), res("localsubjectaccessreviews"), verbs("create")),
		r(g("rbac.authorization.k8s.io"), res("rolebindings", "roles"), allVerbs),
	},
	"system:aggregate-to-edit": {
		r(g(""), res("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"), get),
		r(g(""), res("serviceaccounts"), verbs("impersonate")),
		r(g(""), res("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"), writeVerbs),
		r(g(""), res("pods/eviction"), verbs("create")),
		r(g(""), res("configmaps", "events", "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale",
			"secrets", "serviceaccounts", "services", "services/proxy"), writeVerbs),
		r(g(""), res("serviceaccounts/token"), verbs("create")),
		r(g("apps"), res("daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
			"replicasets/scale", "statefulsets", "statefulsets/scale"), writeVerbs),
		r(g("autoscaling"), res("horizontalpodautoscalers"), writeVerbs),
		r(g("batch"), res("cronjobs", "jobs"), writeVerbs),
		r(g("extensions"), res("daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses",
			"networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"), writeVerbs),
		r(g("policy"), res("poddisruptionbudgets"), writeVerbs),
		r(g("networking.k8s.io"), res("ingresses", "networkpolicies"), writeVerbs),
		r(g("coordination.k8s.io"), res("leases"), allVerbs),
		r(g("resource.k8s.io"), res("resourceclaims", "resourceclaimtemplates"), writeVerbs),
	},
	"system:aggregate-to-view": {
		r(g(""), res("configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
			"replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"), get),
		r(g(""), res("bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
			"replicationcontrollers/status", "resourcequotas", "resourcequotas/status"), get),
		r(g(""), res("namespaces"), get),
		r(g("discovery.k8s.io"), res("endpointslices"), get),
		r(g("apps"), res("controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
			"statefulsets/scale", "statefulsets/status"), get),
		r(g("autoscaling"), res("horizontalpodautoscalers", "horizontalpodautoscalers/status"), get),
		r(g("batch"), res("cronjobs", "cronjobs/status", "jobs", "jobs/status"), get),
		r(g("extensions"), res("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale", "replicasets/status",
			"replicationcontrollers/scale"), get),
		r(g("policy"), res("poddisruptionbudgets", "poddisruptionbudgets/status"), get),
		r(g("networking.k8s.io"), res("ingresses", "ingresses/status", "networkpolicies"), get),
		r(g("resource.k8s.io"), res("resourceclaims", "resourceclaims/status", "resourceclaimtemplates"), get),
	},
	"system:node": {
		r(g("authentication.k8s.io"), res("tokenreviews"), verbs("create")),
		r(g("authorization.k8s.io"), res("localsubjectaccessreviews", "subjectaccessreviews"), verbs("create")),
		r(g(""), res("services"), get),
		r(g(""), res("nodes"), verbs("create", "get", "list", "watch")),
		r(g(""), res("nodes/status"), verbs("patch", "update")),
		r(g(""), res("nodes"), verbs("patch", "update")),
		r(g(""), res("events"), verbs("create", "patch", "update")),
		r(g(""), res("pods"), get),
		r(g(""), res("pods"), verbs("create", "delete")),
		r(g(""), res("pods/status"), verbs("patch", "update")),
		r(g(""), res("pods/eviction"), verbs("create")),
		r(g(""), res("configmaps", "secrets"), get),
		r(g(""), res("persistentvolumeclaims", "persistentvolumes"), verbs("get")),
		r(g(""), res("endpoints"), verbs("get")),
		r(g("certificates.k8s.io"), res("certificatesigningrequests"), verbs("create", "get", "list", "watch")),
		r(g("coordination.k8s.io"), res("leases"), verbs("create", "delete", "get", "patch", "update")),
		r(g("storage.k8s.io"), res("volumeattachments"), verbs("get")),
		r(g(""), res("serviceaccounts/token"), verbs("create")),
		r(g(""), res("persistentvolumeclaims/status"), verbs("get", "patch", "update")),
		r(g("storage.k8s.io"), res("csidrivers"), get),
		r(g("storage.k8s.io"), res("csinodes"), verbs("create", "delete", "get", "patch", "update")),
		r(g("node.k8s.io"), res("runtimeclasses"), get),
		r(g("resource.k8s.io"), res("resourceclaims"), verbs("get")),
		r(g("resource.k8s.io"), res("resourceslices"), verbs("deletecollection")),
		r(g("certificates.k8s.io"), res("clustertrustbundles"), get),
		r(g("certificates.k8s.io"), res("podcertificaterequests"), verbs("create", "get", "list", "watch")),
	},
	"system:controller:endpointslicemirroring-controller": {
		r(g(""), res("endpoints", "services"), get),
		r(g(""), res("services/finalizers"), verbs("update")),
		r(g(""), res("endpoints/finalizers"), verbs("update")),
		r(g("discovery.k8s.io"), res("endpointslices"), verbs("create", "delete", "get", "list", "update", "watch")),
		events,
	},
	"system:controller:certificate-controller": {
		r(g("certificates.k8s.io"), res("certificatesigningrequests"), verbs("delete", "get", "list", "watch")),
		r(g("certificates.k8s.io"), res("certificatesigningrequests/approval", "certificatesigningrequests/status"), verbs("update")),
		named(r(g("certificates.k8s.io"), res("signers"), verbs("approve")), "kubernetes.io/kube-apiserver-client-kubelet"),
		named(r(g("certificates.k8s.io"), res("signers"), verbs("sign")), "kubernetes.io/kube-apiserver-client",
			"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"),
		r(g("authorization.k8s.io"), res("subjectaccessreviews"), verbs("create")),
		events,
	},
	"system:controller:horizontal-pod-autoscaler": {
		r(g("autoscaling"), res("horizontalpodautoscalers"), get),
		r(g("autoscaling"), res("horizontalpodautoscalers/status"), verbs("update")),
		r(g("*"), res("*/scale"), verbs("get", "update")),
		r(g(""), res("pods"), verbs("list", "watch")),
		r(g("metrics.k8s.io"), res("pods"), verbs("list", "watch")),
		r(g("custom.metrics.k8s.io"), res("*"), get),
		r(g("external.metrics.k8s.io"), res("*"), get),
		events,
	},
	"system:controller:ephemeral-volume-controller": {
		r(g(""), res("pods"), get),
		r(g(""), res("pods/finalizers"), verbs("update")),
		r(g(""), res("persistentvolumeclaims"), verbs("create", "get", "list", "watch")),
		events,
	},
	"system:controller:deployment-controller": {
		r(g("apps", "extensions"), res("deployments"), verbs("get", "list", "update", "watch")),
		r(g("apps", "extensions"), res("deployments/status"), verbs("update")),
		r(g("apps", "extensions"), res("deployments/finalizers"), verbs("update")),
		r(g("apps", "extensions"), res("replicasets"), verbs("create", "delete", "get", "list", "patch", "update", "watch")),
		r(g(""), res("pods"), verbs("get", "list", "update", "watch")),
		events,
	},
}

// orchExtensions are the rules orch adds to an upstream role (each
// documented in the policy next to the rule).
var orchExtensions = map[string][]rbacv1.PolicyRule{
	"system:controller:deployment-controller": {r(g("apps", "extensions"), res("deployments"), verbs("patch"))},
}

func TestRolesMatchUpstream(t *testing.T) {
	ours := map[string][]rbacv1.PolicyRule{}
	for _, role := range rbacpolicy.ClusterRoles() {
		ours[role.Name] = role.Rules
	}
	for name, upstream := range upstreamRules {
		t.Run(name, func(t *testing.T) {
			got, ok := ours[name]
			if !ok {
				t.Fatalf("the policy has no ClusterRole %s", name)
			}
			if ok, missing := validation.Covers(got, upstream); !ok {
				t.Errorf("%s lacks upstream's %v", name, missing)
			}
			if ok, extra := validation.Covers(append(upstream, orchExtensions[name]...), got); !ok {
				t.Errorf("%s grants more than upstream (and orch's documented extensions): %v", name, extra)
			}
			if len(orchExtensions[name]) > 0 {
				if ok, _ := validation.Covers(upstream, got); ok {
					t.Errorf("%s: orch's extension %v is no longer in the policy; drop it from orchExtensions", name, orchExtensions[name])
				}
			}
		})
	}
}
