package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/authz"
)

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func l(s ...string) []string { return s }

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(namespace, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules}
}

func clusterBinding(name, clusterRole string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   subjects,
	}
}

// roleBinding binds kind ("Role" or "ClusterRole") roleName in namespace.
func roleBinding(namespace, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName},
		Subjects:   subjects,
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func saSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func newAuthorizer(objs ...any) *Authorizer {
	a := New()
	for _, o := range objs {
		a.Update(o)
	}
	return a
}

func user(name string, groups ...string) authz.User { return authz.User{Name: name, Groups: groups} }

func serviceAccount(namespace, name string) authz.User {
	return authz.User{
		Name:   authz.ServiceAccountUser(namespace, name),
		Groups: append(authz.ServiceAccountGroups(namespace), authz.AuthenticatedGroup),
	}
}

// resourceRequest is verb on group/resource[/subresource] name in namespace.
func resourceRequest(u authz.User, verb, namespace, group, resource, subresource, name string) authz.Attributes {
	return authz.Attributes{
		User: u, Verb: verb, ResourceRequest: true, Namespace: namespace,
		APIGroup: group, Resource: resource, Subresource: subresource, Name: name,
	}
}

func pathRequest(u authz.User, verb, path string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, Path: path}
}
