package rbac

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"orch/internal/apiserver/authz"
)

// ConfirmNoEscalation returns nil when user already holds every one of
// rules in namespace ("" = cluster-wide), so that creating a role or
// binding with them grants nothing new. Otherwise the error words the
// missing rules as upstream does:
//
//	user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
//	{APIGroups:[""], Resources:["pods"], Verbs:["get"]}
//
// followed by "; resolution errors: [...]" when some of user's bindings
// refer to missing roles. The caller turns it into a Forbidden.
func (a *Authorizer) ConfirmNoEscalation(user authz.User, namespace string, rules []rbacv1.PolicyRule) error {
	held, resolveErr := a.RulesFor(user, namespace)
	covered, missing := validation.Covers(held, rules)
	if covered {
		return nil
	}
	lines := make([]string, 0, len(missing))
	for _, r := range compactRules(missing) {
		lines = append(lines, compactString(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		user.Name, user.Groups, strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolveErr})
	}
	return errors.New(msg)
}

// compactRules merges the rules that name one API group and one resource
// and nothing but verbs into one rule per group and resource, with their
// verbs in order; other rules are kept as they are.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type groupResource struct{ group, resource string }
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	merged := map[groupResource]int{} // index in out
	for _, r := range rules {
		if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			out = append(out, r)
			continue
		}
		key := groupResource{r.APIGroups[0], r.Resources[0]}
		if i, ok := merged[key]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		merged[key] = len(out)
		out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: slices.Clone(r.Verbs)})
	}
	return out
}

// compactString words a rule as upstream's escalation errors do, e.g.
// {APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}; empty fields
// are left out.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, values []string) {
		if len(values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, values))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
