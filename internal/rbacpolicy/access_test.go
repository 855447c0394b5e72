package rbacpolicy_test

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"orch/internal/rbacpolicy"
)

// rulesOf returns the rules the policy grants user (in groups) in
// namespace ("" for the cluster-wide bindings only).
func rulesOf(user string, groups []string, namespace string) []rbacv1.PolicyRule {
	clusterRoles := map[string][]rbacv1.PolicyRule{}
	for _, r := range rbacpolicy.ClusterRoles() {
		clusterRoles[r.Name] = r.Rules
	}
	roles := map[string][]rbacv1.PolicyRule{}
	for _, r := range rbacpolicy.Roles() {
		roles[r.Namespace+"/"+r.Name] = r.Rules
	}
	var out []rbacv1.PolicyRule
	for _, b := range rbacpolicy.ClusterRoleBindings() {
		if names(b.Subjects, user, groups) {
			out = append(out, clusterRoles[b.RoleRef.Name]...)
		}
	}
	for _, b := range rbacpolicy.RoleBindings() {
		if namespace == "" || b.Namespace != namespace || !names(b.Subjects, user, groups) {
			continue
		}
		if b.RoleRef.Kind == "ClusterRole" {
			out = append(out, clusterRoles[b.RoleRef.Name]...)
		} else {
			out = append(out, roles[b.Namespace+"/"+b.RoleRef.Name]...)
		}
	}
	return out
}

// names reports whether one of subjects is user or one of groups.
func names(subjects []rbacv1.Subject, user string, groups []string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user {
				return true
			}
		case rbacv1.GroupKind:
			if slices.Contains(groups, s.Name) {
				return true
			}
		case rbacv1.ServiceAccountKind:
			if user == "system:serviceaccount:"+s.Namespace+":"+s.Name {
				return true
			}
		}
	}
	return false
}

// do is a request an identity makes: verbs on resources of group.
func do(group string, verbs []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Verbs: verbs, Resources: resources}
}

func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule { r.ResourceNames = names; return r }

func v(verbs ...string) []string { return verbs }

// watched is what an identity's own informers list and watch.
func watched(group string, resources ...string) rbacv1.PolicyRule {
	return do(group, v("list", "watch"), resources...)
}

// controllerNeeds is, per controller, what its code asks the apiserver
// with its own client (read from internal/controller/<name>), in the
// namespace the request is in. The shared informers are the controller
// manager's, checked apart.
var controllerNeeds = map[string]struct {
	namespace string
	rules     []rbacv1.PolicyRule
}{
	"nodelifecycle": {"default", []rbacv1.PolicyRule{
		do("", v("update"), "nodes", "nodes/status"), do("", v("delete"), "pods")}},
	"nodeipam": {"", []rbacv1.PolicyRule{do("", v("patch"), "nodes")}},
	"podgc":    {"default", []rbacv1.PolicyRule{do("", v("delete"), "pods")}},
	"replicaset": {"default", []rbacv1.PolicyRule{
		do("apps", v("get"), "replicasets"), do("apps", v("update"), "replicasets/status", "replicasets/finalizers"),
		do("", v("get"), "replicationcontrollers"), do("", v("update"), "replicationcontrollers/status", "replicationcontrollers/finalizers"),
		do("", v("create", "delete", "patch"), "pods")}},
	"deployment": {"default", []rbacv1.PolicyRule{
		do("apps", v("get", "update", "patch"), "deployments"), do("apps", v("update"), "deployments/status", "deployments/finalizers"),
		do("apps", v("get", "create", "update", "patch", "delete"), "replicasets")}},
	"statefulset": {"default", []rbacv1.PolicyRule{
		do("apps", v("get"), "statefulsets"), do("apps", v("update"), "statefulsets/status", "statefulsets/finalizers"),
		do("", v("create", "update", "patch", "delete"), "pods"), do("", v("update"), "pods/finalizers"),
		do("", v("create", "update"), "persistentvolumeclaims"),
		do("apps", v("get", "create", "update", "patch", "delete"), "controllerrevisions")}},
	"daemonset": {"default", []rbacv1.PolicyRule{
		do("apps", v("get"), "daemonsets"), do("apps", v("update"), "daemonsets/status", "daemonsets/finalizers"),
		do("", v("create", "patch", "delete"), "pods"),
		do("apps", v("get", "create", "update", "patch", "delete"), "controllerrevisions")}},
	"job": {"default", []rbacv1.PolicyRule{
		do("batch", v("get"), "jobs"), do("batch", v("update"), "jobs/status", "jobs/finalizers"),
		do("", v("create", "patch", "delete"), "pods")}},
	"cronjob": {"default", []rbacv1.PolicyRule{
		do("batch", v("get"), "cronjobs"), do("batch", v("update"), "cronjobs/status", "cronjobs/finalizers"),
		do("batch", v("get", "create", "delete"), "jobs")}},
	"garbagecollector": {"default", []rbacv1.PolicyRule{
		do("*", v("get", "list", "watch", "patch", "delete"), "*")}},
	"namespace": {"default", []rbacv1.PolicyRule{
		do("", v("get"), "namespaces"), do("", v("update"), "namespaces/status", "namespaces/finalize"),
		do("*", v("list", "delete", "deletecollection"), "*")}},
	"serviceaccount":         {"default", []rbacv1.PolicyRule{do("", v("create"), "serviceaccounts")}},
	"root-ca-cert-publisher": {"default", []rbacv1.PolicyRule{do("", v("create", "update"), "configmaps")}},
	"resourcequota":          {"default", []rbacv1.PolicyRule{do("", v("update"), "resourcequotas/status")}},
	"ttlafterfinished":       {"default", []rbacv1.PolicyRule{do("batch", v("delete"), "jobs")}},
	"endpointslice": {"default", []rbacv1.PolicyRule{
		do("discovery.k8s.io", v("create", "update", "delete"), "endpointslices"), do("", v("update"), "services/finalizers")}},
	"endpointslicemirroring": {"default", []rbacv1.PolicyRule{
		do("discovery.k8s.io", v("create", "update", "delete"), "endpointslices"), do("", v("update"), "endpoints/finalizers")}},
	"endpoints": {"default", []rbacv1.PolicyRule{do("", v("create", "update", "delete"), "endpoints")}},
	"disruption": {"default", []rbacv1.PolicyRule{
		do("policy", v("update"), "poddisruptionbudgets/status"), do("", v("update"), "pods/status")}},
	"pvbinder": {"default", []rbacv1.PolicyRule{
		do("", v("update", "delete"), "persistentvolumes"), do("", v("update"), "persistentvolumes/status"),
		do("", v("get", "update"), "persistentvolumeclaims"), do("", v("update"), "persistentvolumeclaims/status")}},
	"pvc-protection": {"default", []rbacv1.PolicyRule{
		do("", v("update"), "persistentvolumeclaims"), do("", v("list"), "pods")}},
	"pv-protection": {"", []rbacv1.PolicyRule{do("", v("update"), "persistentvolumes")}},
	"clusterroleaggregation": {"", []rbacv1.PolicyRule{
		do("rbac.authorization.k8s.io", v("get", "list", "watch", "update", "patch", "escalate"), "clusterroles")}},
	"nodepassword": {"kube-system", []rbacv1.PolicyRule{
		watched("", "secrets"), do("", v("update", "delete"), "secrets")}},
	"clusterdns": {"kube-system", []rbacv1.PolicyRule{
		do("discovery.k8s.io", v("get", "create", "update"), "endpointslices")}},
	"servicelb": {"default", []rbacv1.PolicyRule{do("", v("update"), "services/status")}},
	"certificates": {"", []rbacv1.PolicyRule{
		do("certificates.k8s.io", v("update"), "certificatesigningrequests/status", "certificatesigningrequests/approval"),
		do("certificates.k8s.io", v("delete"), "certificatesigningrequests"),
		named(do("certificates.k8s.io", v("sign"), "signers"), "kubernetes.io/kube-apiserver-client", "kubernetes.io/kubelet-serving"),
		named(do("certificates.k8s.io", v("approve"), "signers"), "kubernetes.io/kube-apiserver-client-kubelet"),
		do("authorization.k8s.io", v("create"), "subjectaccessreviews")}},
	"horizontalpodautoscaling": {"default", []rbacv1.PolicyRule{
		do("autoscaling", v("update"), "horizontalpodautoscalers/status"),
		do("apps", v("get", "update"), "deployments/scale"), do("example.com", v("get", "update"), "widgets/scale"),
		do("metrics.k8s.io", v("list"), "pods"),
		do("custom.metrics.k8s.io", v("get"), "pods/requests_per_second"), do("external.metrics.k8s.io", v("list"), "queue_length"),
		do("", v("create", "patch", "update"), "events")}},
	"ephemeral-volume": {"default", []rbacv1.PolicyRule{do("", v("create"), "persistentvolumeclaims")}},
	"local-path": {"default", []rbacv1.PolicyRule{
		do("", v("create", "update"), "persistentvolumes"), do("", v("update"), "persistentvolumeclaims/status")}},
	"gateway": {"default", []rbacv1.PolicyRule{
		watched("gateway.networking.k8s.io", "gatewayclasses", "gateways", "httproutes", "referencegrants"),
		do("gateway.networking.k8s.io", v("update"), "gatewayclasses/status", "gateways/status", "httproutes/status"),
		watched("", "secrets")}},
	"crd": {"default", []rbacv1.PolicyRule{
		do("apiextensions.k8s.io", v("get", "list", "watch", "update"), "customresourcedefinitions"),
		do("apiextensions.k8s.io", v("update"), "customresourcedefinitions/status"),
		do("example.com", v("list", "delete", "deletecollection"), "widgets")}},
	"validatingadmissionpolicy-status": {"", []rbacv1.PolicyRule{
		do("admissionregistration.k8s.io", v("patch"), "validatingadmissionpolicies/status")}},
}

func TestControllersMayDoWhatTheirCodeDoes(t *testing.T) {
	for controller := range rbacpolicy.ControllerServiceAccounts {
		if _, ok := controllerNeeds[controller]; !ok {
			t.Errorf("controller %s: write down what its code asks the apiserver in controllerNeeds", controller)
		}
	}
	for controller, need := range controllerNeeds {
		sa, ok := rbacpolicy.ControllerServiceAccounts[controller]
		if !ok {
			t.Errorf("controller %s is not in ControllerServiceAccounts", controller)
			continue
		}
		user := rbacpolicy.ControllerUser(sa)
		groups := []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}
		if ok, missing := validation.Covers(rulesOf(user, groups, need.namespace), need.rules); !ok {
			t.Errorf("controller %s (%s) may not: %v", controller, user, missing)
		}
	}
}

func TestIdentitiesMayDoWhatTheirCodeDoes(t *testing.T) {
	authenticated := []string{"system:authenticated"}
	tests := []struct {
		name, user, namespace string
		rules                 []rbacv1.PolicyRule
	}{
		{"controller manager: shared informers, events, leader election", rbacpolicy.ControllerManagerUser, "kube-system", []rbacv1.PolicyRule{
			do("*", v("list", "watch"), "*"),
			do("", v("create", "patch", "update"), "events"),
			do("", v("get"), "namespaces"),
			do("coordination.k8s.io", v("create"), "leases"),
			named(do("coordination.k8s.io", v("get", "update"), "leases"), rbacpolicy.ControllerManagerLease),
		}},
		{"scheduler", rbacpolicy.SchedulerUser, "default", []rbacv1.PolicyRule{
			watched("", "pods", "nodes", "namespaces", "persistentvolumeclaims", "persistentvolumes", "services", "replicationcontrollers"),
			watched("apps", "replicasets", "statefulsets"), watched("storage.k8s.io", "storageclasses"),
			watched("scheduling.k8s.io", "priorityclasses"),
			do("", v("create"), "pods/binding"), do("", v("get", "delete"), "pods"), do("", v("update"), "pods/status"),
			do("", v("update"), "persistentvolumes"), do("", v("get", "update"), "persistentvolumeclaims"),
			do("", v("create", "patch", "update"), "events"),
		}},
		{"service proxy", rbacpolicy.ProxyUser, "", []rbacv1.PolicyRule{
			watched("", "services"), watched("discovery.k8s.io", "endpointslices"),
		}},
		{"cluster DNS", rbacpolicy.DNSUser, "", []rbacv1.PolicyRule{
			watched("", "services"), watched("discovery.k8s.io", "endpointslices"),
		}},
		{"local-path clean-up", rbacpolicy.LocalPathUser, "", []rbacv1.PolicyRule{
			watched("", "persistentvolumes"), do("", v("get", "update", "delete"), "persistentvolumes"),
		}},
		{"manifests applier", rbacpolicy.ManifestsUser, "", []rbacv1.PolicyRule{
			do("*", v("*"), "*"),
		}},
		{"apiserver to kubelets", rbacpolicy.KubeletClientUser, "", []rbacv1.PolicyRule{
			do("", v("get", "create"), "nodes/proxy", "nodes/log", "nodes/stats", "nodes/metrics"),
		}},
		// internal/join's Renewer: a node renewing its own client
		// certificate through a CertificateSigningRequest, which the
		// certificates controller approves after this access review.
		{"node renewing its client certificate", "system:node:n1", "", []rbacv1.PolicyRule{
			do("certificates.k8s.io", v("create"), "certificatesigningrequests/selfnodeclient"),
		}},
		{"any authenticated user: discovery and self reviews", "someone", "", []rbacv1.PolicyRule{
			{Verbs: v("get"), NonResourceURLs: []string{"/api", "/apis/apps/v1", "/version", "/healthz"}},
			do("authorization.k8s.io", v("create"), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ok, missing := validation.Covers(rulesOf(tt.user, groupsOf(tt.user, authenticated), tt.namespace), tt.rules); !ok {
				t.Errorf("%s may not: %v", tt.user, missing)
			}
		})
	}
}

// TestIdentitiesGetNoMoreThanTheirs checks the narrow grants stay narrow.
func TestIdentitiesGetNoMoreThanTheirs(t *testing.T) {
	tests := []struct {
		name, user, namespace string
		denied                rbacv1.PolicyRule
	}{
		{"node passwords outside kube-system", rbacpolicy.ControllerUser("orch-node-password-controller"), "default",
			do("", v("list"), "secrets")},
		{"servicelb rewriting a Service", rbacpolicy.ControllerUser("orch-servicelb-controller"), "default",
			do("", v("update"), "services")},
		{"cluster DNS reading secrets", rbacpolicy.DNSUser, "kube-system", do("", v("get"), "secrets")},
		{"local-path clean-up making volumes", rbacpolicy.LocalPathUser, "", do("", v("create"), "persistentvolumes")},
		{"local-path clean-up touching claims", rbacpolicy.LocalPathUser, "default", do("", v("update", "delete"), "persistentvolumeclaims")},
		{"cluster DNS slices elsewhere", rbacpolicy.ControllerUser("orch-cluster-dns-controller"), "default",
			do("discovery.k8s.io", v("update"), "endpointslices")},
		{"crd controller writing what is not a CRD", rbacpolicy.ControllerUser("orch-crd-controller"), "default",
			do("", v("create", "update", "patch"), "secrets")},
		{"crd controller reading secrets one by one", rbacpolicy.ControllerUser("orch-crd-controller"), "default",
			do("", v("get"), "secrets")},
		{"controller manager holding another lease", rbacpolicy.ControllerManagerUser, "default",
			do("coordination.k8s.io", v("update"), "leases")},
		{"anonymous discovery", "system:anonymous", "", rbacv1.PolicyRule{Verbs: v("get"), NonResourceURLs: []string{"/api"}}},
		{"node having another node's client certificate approved", "system:node:n1", "",
			do("certificates.k8s.io", v("create"), "certificatesigningrequests/nodeclient")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups := groupsOf(tt.user, []string{"system:authenticated"})
			if tt.user == "system:anonymous" {
				groups = []string{"system:unauthenticated"}
			}
			if ok, _ := validation.Covers(rulesOf(tt.user, groups, tt.namespace), []rbacv1.PolicyRule{tt.denied}); ok {
				t.Errorf("%s may %v", tt.user, tt.denied)
			}
		})
	}
}

// groupsOf is groups, and system:nodes for a node's user
// (system:node:NAME), as the apiserver authenticates a kubelet.
func groupsOf(user string, groups []string) []string {
	if strings.HasPrefix(user, "system:node:") {
		return append(slices.Clone(groups), "system:nodes")
	}
	return groups
}
