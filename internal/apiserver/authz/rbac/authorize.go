package rbac

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"orch/internal/apiserver/authz"
)

// Authorize allows the request when a rule bound to its user allows it,
// with the binding as the reason (`RBAC: allowed by ClusterRoleBinding "x"
// of ClusterRole "y" to Group "z"`). Otherwise it has no opinion; the
// reason then names the roles that bindings of the user refer to but that
// do not exist. It never denies and never returns an error.
func (a *Authorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	var reason string
	var errs []error
	a.mu.RLock()
	a.visit(&attrs.User, attrs.Namespace, func(b *binding, s *subject, rules []rbacv1.PolicyRule, ok bool) bool {
		if !ok {
			errs = append(errs, unresolved(b.roleRef, listerResources))
			return true
		}
		for i := range rules {
			if ruleAllows(&rules[i], &attrs) {
				reason = s.reason
				return false
			}
		}
		return true
	})
	a.mu.RUnlock()
	if reason != "" {
		return authz.Allow, reason, nil
	}
	if len(errs) > 0 {
		return authz.NoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authz.NoOpinion, "", nil
}
