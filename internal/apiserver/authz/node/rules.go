package node

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

// Rules are the rules of upstream's system:node ClusterRole
// (bootstrappolicy.NodeRules() at 1.37) for the groups orch serves, plus
// certificatesigningrequests, which upstream grants unconditionally. The
// Node authorizer answers every request its graph and selector checks do
// not cover with these rules. Left out: the DynamicResourceAllocation rules
// (resourceclaims get, resourceslices deletecollection), which upstream
// narrows to the node's own claims and slices: orch's graph does not
// track them, and its kubelet runs no DRA driver.
var Rules = []rbacv1.PolicyRule{
	// API access checks; these creates change nothing.
	rule([]string{"create"}, "authentication.k8s.io", "tokenreviews"),
	rule([]string{"create"}, "authorization.k8s.io", "subjectaccessreviews", "localsubjectaccessreviews"),
	// The service lister behind the service environment variables.
	rule([]string{"get", "list", "watch"}, "", "services"),
	// Registering and reporting the Node; NodeRestriction limits a node to its own.
	rule([]string{"create", "get", "list", "watch"}, "", "nodes"),
	rule([]string{"update", "patch"}, "", "nodes/status"),
	rule([]string{"update", "patch"}, "", "nodes"),
	rule([]string{"create", "update", "patch"}, "", "events"),
	rule([]string{"get", "list", "watch"}, "", "pods"),
	// Mirror pods, pod status and evictions; NodeRestriction limits them
	// to pods bound to the node.
	rule([]string{"create", "delete"}, "", "pods"),
	rule([]string{"update", "patch"}, "", "pods/status"),
	rule([]string{"create"}, "", "pods/eviction"),
	// The Node authorizer narrows these to the objects the node's pods use.
	rule([]string{"get", "list", "watch"}, "", "secrets", "configmaps"),
	rule([]string{"get"}, "", "persistentvolumeclaims", "persistentvolumes"),
	rule([]string{"get"}, "", "endpoints"),
	// Certificate rotation of the kubelet's own client certificate.
	rule([]string{"create", "get", "list", "watch"}, "certificates.k8s.io", "certificatesigningrequests"),
	rule([]string{"get", "create", "update", "patch", "delete"}, "coordination.k8s.io", "leases"),
	rule([]string{"get"}, "storage.k8s.io", "volumeattachments"),
	rule([]string{"create"}, "", "serviceaccounts/token"),
	rule([]string{"get", "update", "patch"}, "", "persistentvolumeclaims/status"),
	rule([]string{"get", "watch", "list"}, "storage.k8s.io", "csidrivers"),
	rule([]string{"get", "create", "update", "patch", "delete"}, "storage.k8s.io", "csinodes"),
	rule([]string{"get", "list", "watch"}, "node.k8s.io", "runtimeclasses"),
	// clusterTrustBundle and podCertificate projected volumes.
	rule([]string{"get", "list", "watch"}, "certificates.k8s.io", "clustertrustbundles"),
	rule([]string{"get", "list", "watch", "create"}, "certificates.k8s.io", "podcertificaterequests"),
	// The service account of a pod, for image credential providers
	// (KubeletServiceAccountTokenForCredentialProviders, on since 1.34).
	rule([]string{"get"}, "", "serviceaccounts"),
}

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

// rulesAllow reports whether one of rules allows the resource request a,
// as upstream's RBAC rule matching does: verb, API group, resource (with
// its subresource as "resource/sub" or "*/sub") and, when the rule names
// any, the object's name. Non-resource requests match no rule here (the
// node rules have no URLs).
func rulesAllow(a authz.Attributes, rules []rbacv1.PolicyRule) bool {
	if !a.ResourceRequest {
		return false
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	for i := range rules {
		r := &rules[i]
		if matches(r.Verbs, a.Verb) && matches(r.APIGroups, a.APIGroup) &&
			resourceMatches(r.Resources, resource, a.Subresource) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.Name)) {
			return true
		}
	}
	return false
}

func matches(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

func resourceMatches(list []string, resource, sub string) bool {
	for _, s := range list {
		if s == "*" || s == resource {
			return true
		}
		if sub != "" && len(s) == len(sub)+2 && strings.HasPrefix(s, "*/") && strings.HasSuffix(s, sub) {
			return true
		}
	}
	return false
}
