package rbac

import (
	"context"
	"math/rand/v2"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

// TestRandomPolicies feeds random adds, replacements and deletes from a
// small alphabet of names, and checks every decision against a plain
// reading of the objects that are left.
func TestRandomPolicies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	namespaces := l("ns1", "ns2")
	names := l("a", "b", "c")
	randomRules := func() []rbacv1.PolicyRule {
		var rules []rbacv1.PolicyRule
		for range rng.IntN(3) {
			if rng.IntN(4) == 0 {
				rules = append(rules, urls(l(pick("get", "*")), pick("/healthz", "/healthz/*", "*")))
				continue
			}
			r := rule(l(pick("get", "list", "*")), l(pick("", "apps", "*")), l(pick("pods", "pods/log", "*/log", "*")))
			if rng.IntN(3) == 0 {
				r.ResourceNames = l(pick("p", "q"))
			}
			rules = append(rules, r)
		}
		return rules
	}
	randomSubjects := func() []rbacv1.Subject {
		var subjects []rbacv1.Subject
		for range rng.IntN(3) {
			switch rng.IntN(3) {
			case 0:
				subjects = append(subjects, userSubject(pick("jane", "bob")))
			case 1:
				subjects = append(subjects, groupSubject(pick("devs", "ops")))
			default:
				subjects = append(subjects, saSubject(pick("", "ns1", "ns2"), pick("sa")))
			}
		}
		return subjects
	}
	randomObject := func() any {
		switch rng.IntN(4) {
		case 0:
			return role(pick(namespaces...), pick(names...), randomRules()...)
		case 1:
			return clusterRole(pick(names...), randomRules()...)
		case 2:
			return roleBinding(pick(namespaces...), pick(names...), pick("Role", "ClusterRole"), pick(names...), randomSubjects()...)
		default:
			return clusterBinding(pick(names...), pick(names...), randomSubjects()...)
		}
	}
	users := []authz.User{user("jane", "devs"), user("bob", "ops"), serviceAccount("ns1", "sa"), serviceAccount("ns2", "sa"), user("nobody")}
	randomAttrs := func() authz.Attributes {
		u := users[rng.IntN(len(users))]
		if rng.IntN(4) == 0 {
			return pathRequest(u, pick("get", "post"), pick("/healthz", "/healthz/etcd", "/metrics"))
		}
		resource, sub := pick("pods", "nodes"), pick("", "log", "status")
		return resourceRequest(u, pick("get", "list"), pick("", "ns1", "ns2"), pick("", "apps"), resource, sub, pick("", "p", "q"))
	}

	a := New()
	live := map[[3]string]any{} // kind, namespace, name
	key := func(o any) [3]string {
		switch o := o.(type) {
		case *rbacv1.Role:
			return [3]string{"Role", o.Namespace, o.Name}
		case *rbacv1.ClusterRole:
			return [3]string{"ClusterRole", "", o.Name}
		case *rbacv1.RoleBinding:
			return [3]string{"RoleBinding", o.Namespace, o.Name}
		case *rbacv1.ClusterRoleBinding:
			return [3]string{"ClusterRoleBinding", "", o.Name}
		}
		panic("unexpected type")
	}
	allowed := 0
	for step := range 3000 {
		o := randomObject()
		if rng.IntN(3) == 0 {
			a.Delete(o)
			delete(live, key(o))
		} else {
			a.Update(o)
			live[key(o)] = o
		}
		for range 5 {
			attrs := randomAttrs()
			d, _, _ := a.Authorize(context.Background(), attrs)
			if want := plainDecision(live, attrs); d != want {
				t.Fatalf("step %d: %+v: %v, want %v", step, attrs, d, want)
			}
			if d == authz.Allow {
				allowed++
			}
		}
	}
	if allowed == 0 {
		t.Error("no request was allowed: the random policies are too sparse to test anything")
	}
}

// plainDecision reads the objects directly, as the RBAC documentation
// describes them.
func plainDecision(live map[[3]string]any, attrs authz.Attributes) authz.Decision {
	applies := func(subjects []rbacv1.Subject, bindingNamespace string) bool {
		for _, s := range subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				if s.Name == attrs.User.Name {
					return true
				}
			case rbacv1.GroupKind:
				if attrs.User.InGroup(s.Name) {
					return true
				}
			case rbacv1.ServiceAccountKind:
				ns := s.Namespace
				if ns == "" {
					ns = bindingNamespace
				}
				if ns != "" && attrs.User.Name == "system:serviceaccount:"+ns+":"+s.Name {
					return true
				}
			}
		}
		return false
	}
	allows := func(ref rbacv1.RoleRef, namespace string) bool {
		var rules []rbacv1.PolicyRule
		if ref.Kind == "Role" {
			if r, ok := live[[3]string{"Role", namespace, ref.Name}]; ok {
				rules = r.(*rbacv1.Role).Rules
			}
		} else if r, ok := live[[3]string{"ClusterRole", "", ref.Name}]; ok {
			rules = r.(*rbacv1.ClusterRole).Rules
		}
		for i := range rules {
			if ruleAllows(&rules[i], &attrs) {
				return true
			}
		}
		return false
	}
	for _, o := range live {
		switch o := o.(type) {
		case *rbacv1.ClusterRoleBinding:
			if applies(o.Subjects, "") && allows(o.RoleRef, "") {
				return authz.Allow
			}
		case *rbacv1.RoleBinding:
			if attrs.Namespace != "" && o.Namespace == attrs.Namespace && applies(o.Subjects, o.Namespace) && allows(o.RoleRef, o.Namespace) {
				return authz.Allow
			}
		}
	}
	return authz.NoOpinion
}
