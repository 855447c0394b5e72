package rbac

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"orch/internal/apiserver/authz"
)

// roleResources name roles in "not found" errors. Upstream's authorizer
// reads listers, whose errors say "role" and "clusterrole"; its escalation
// checks read the registry, whose errors say "roles" and "clusterroles".
type roleResources struct{ role, clusterRole schema.GroupResource }

var (
	listerResources   = roleResources{rbacv1.Resource("role"), rbacv1.Resource("clusterrole")}
	registryResources = roleResources{rbacv1.Resource("roles"), rbacv1.Resource("clusterroles")}
)

// roleRules returns the rules of the role ref names for a binding in
// namespace ("" for a ClusterRoleBinding); ok is false when there is no
// such role. The caller holds a.mu.
func (a *Authorizer) roleRules(ref rbacv1.RoleRef, namespace string) (rules []rbacv1.PolicyRule, ok bool) {
	switch ref.Kind {
	case "Role":
		rules, ok = a.roles[roleKey{namespace, ref.Name}]
	case "ClusterRole":
		rules, ok = a.clusterRoles[ref.Name]
	}
	return rules, ok
}

// unresolved is the error for a role ref that roleRules did not find.
func unresolved(ref rbacv1.RoleRef, names roleResources) error {
	switch ref.Kind {
	case "Role":
		return apierrors.NewNotFound(names.role, ref.Name)
	case "ClusterRole":
		return apierrors.NewNotFound(names.clusterRole, ref.Name)
	}
	return fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// visit calls fn for each binding that applies to u, in upstream's order:
// ClusterRoleBindings, then (when namespace is not "") the RoleBindings of
// namespace, each with the first subject u matches and the rules of its
// role (ok false when the role is missing). fn returns false to stop. The
// caller holds a.mu.
func (a *Authorizer) visit(u *authz.User, namespace string, fn func(b *binding, s *subject, rules []rbacv1.PolicyRule, ok bool) bool) {
	for _, b := range a.clusterBindings {
		if s, applies := b.applies(u); applies {
			rules, ok := a.roleRules(b.roleRef, "")
			if !fn(b, s, rules, ok) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	for _, b := range a.bindings[namespace] {
		if s, applies := b.applies(u); applies {
			rules, ok := a.roleRules(b.roleRef, namespace)
			if !fn(b, s, rules, ok) {
				return
			}
		}
	}
}

// RulesFor returns every rule user holds in namespace: from the
// ClusterRoleBindings, plus the RoleBindings of namespace unless it is "".
// The error lists the roles that bindings of user refer to but that do
// not exist; the rules found are returned all the same, since rules only
// ever add permissions. The rules share their slices with the stored
// roles: do not modify them.
func (a *Authorizer) RulesFor(user authz.User, namespace string) ([]rbacv1.PolicyRule, error) {
	return a.rulesFor(&user, namespace, registryResources)
}

func (a *Authorizer) rulesFor(u *authz.User, namespace string, names roleResources) ([]rbacv1.PolicyRule, error) {
	var all []rbacv1.PolicyRule
	var errs []error
	a.mu.RLock()
	a.visit(u, namespace, func(b *binding, _ *subject, rules []rbacv1.PolicyRule, ok bool) bool {
		if !ok {
			errs = append(errs, unresolved(b.roleRef, names))
		}
		all = append(all, rules...)
		return true
	})
	a.mu.RUnlock()
	return all, utilerrors.NewAggregate(errs)
}

// RoleRules returns the rules of the role that a binding in namespace
// refers to: a Role of namespace or a ClusterRole. A missing role is a
// NotFound error on roles or clusterroles, as upstream's registry returns.
func (a *Authorizer) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	a.mu.RLock()
	rules, ok := a.roleRules(ref, namespace)
	a.mu.RUnlock()
	if !ok {
		return nil, unresolved(ref, registryResources)
	}
	return slices.Clone(rules), nil
}
