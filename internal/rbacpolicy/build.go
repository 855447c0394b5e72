package rbacpolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// API groups the rules name.
const (
	core                  = ""
	admissionRegistration = "admissionregistration.k8s.io"
	apiextensions         = "apiextensions.k8s.io"
	apps                  = "apps"
	authn                 = "authentication.k8s.io"
	authz                 = "authorization.k8s.io"
	autoscaling           = "autoscaling"
	batch                 = "batch"
	certificates          = "certificates.k8s.io"
	coordination          = "coordination.k8s.io"
	discovery             = "discovery.k8s.io"
	eventsGroup           = "events.k8s.io"
	extensions            = "extensions"
	gatewayGroup          = "gateway.networking.k8s.io"
	networking            = "networking.k8s.io"
	nodeGroup             = "node.k8s.io"
	policyGroup           = "policy"
	rbacGroup             = rbacv1.GroupName
	resourceGroup         = "resource.k8s.io"
	scheduling            = "scheduling.k8s.io"
	storage               = "storage.k8s.io"
)

// Verb sets, as upstream's bootstrap policy names them.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = append(slices.Clone(read), write...)
)

// rule is a policy rule under construction: verbs(...).groups(...).resources(...).
// Every list is sorted and without duplicates, as upstream stores them.
type rule rbacv1.PolicyRule

func verbs(v ...string) rule { return rule{Verbs: set(v)} }

func (r rule) groups(g ...string) rule    { r.APIGroups = set(g); return r }
func (r rule) resources(s ...string) rule { r.Resources = set(s); return r }
func (r rule) names(n ...string) rule     { r.ResourceNames = set(n); return r }
func (r rule) urls(u ...string) rule      { r.NonResourceURLs = set(u); return r }

// eventsRule lets a component write events (core and events.k8s.io).
func eventsRule() rule {
	return verbs("create", "update", "patch").groups(core, eventsGroup).resources("events")
}

func set(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

func policyRules(rs []rule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rs))
	for i, r := range rs {
		out[i] = rbacv1.PolicyRule(r)
	}
	return out
}

// meta is the metadata of a policy object: the bootstrapping label (plus
// extra labels) and the autoupdate annotation.
func meta(namespace, name string, extraLabels map[string]string) metav1.ObjectMeta {
	labels := map[string]string{BootstrappingLabel: BootstrappingValue}
	for k, v := range extraLabels {
		labels[k] = v
	}
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels,
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}}
}

func clusterRole(name string, rs ...rule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta("", name, nil), Rules: policyRules(rs)}
}

func role(namespace, name string, rs ...rule) rbacv1.Role {
	return rbacv1.Role{ObjectMeta: meta(namespace, name, nil), Rules: policyRules(rs)}
}

// Subjects of bindings.
func users(names ...string) []rbacv1.Subject  { return subjects(rbacv1.UserKind, names) }
func groups(names ...string) []rbacv1.Subject { return subjects(rbacv1.GroupKind, names) }

func subjects(kind string, names []string) []rbacv1.Subject {
	out := make([]rbacv1.Subject, len(names))
	for i, n := range names {
		out[i] = rbacv1.Subject{Kind: kind, APIGroup: rbacGroup, Name: n}
	}
	return out
}

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// clusterBinding binds the ClusterRole of its own name to subjects.
func clusterBinding(name string, subjects ...[]rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: meta("", name, nil),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: name},
		Subjects: slices.Concat(subjects...)}
}

// roleBinding binds the Role roleName of namespace to subjects.
func roleBinding(namespace, name, roleName string, subjects ...[]rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{ObjectMeta: meta(namespace, name, nil),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: roleName},
		Subjects: slices.Concat(subjects...)}
}
