package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch/internal/apiserver/authz"
)

func TestRulesFor(t *testing.T) {
	readPods := rule(l("get"), l(""), l("pods"))
	health := urls(l("get"), "/healthz")
	editCMs := rule(l("update"), l(""), l("configmaps"))
	deploy := rule(l("*"), l("apps"), l("deployments"))
	a := newAuthorizer(
		clusterRole("pod-reader", readPods),
		clusterRole("health", health),
		clusterRole("deployer", deploy),
		role("ns1", "cm-editor", editCMs),
		clusterBinding("readers", "pod-reader", groupSubject("devs")),
		clusterBinding("health", "health", groupSubject(authz.AuthenticatedGroup)),
		clusterBinding("gone", "no-such-role", userSubject("jane")),
		clusterBinding("others", "deployer", userSubject("bob")),
		roleBinding("ns1", "edit", "Role", "cm-editor", userSubject("jane")),
		roleBinding("ns1", "deploy", "ClusterRole", "deployer", groupSubject("devs")),
		roleBinding("ns1", "dangling", "Role", "gone", userSubject("jane")),
		roleBinding("ns2", "edit", "ClusterRole", "deployer", userSubject("jane")),
	)
	jane := user("jane", "devs", authz.AuthenticatedGroup)
	tests := []struct {
		name      string
		user      authz.User
		namespace string
		want      []rbacv1.PolicyRule
		err       string
	}{
		{"cluster-wide", jane, "", []rbacv1.PolicyRule{health, readPods},
			`clusterroles.rbac.authorization.k8s.io "no-such-role" not found`},
		{"with a namespace's bindings", jane, "ns1", []rbacv1.PolicyRule{health, readPods, deploy, editCMs},
			`[clusterroles.rbac.authorization.k8s.io "no-such-role" not found, roles.rbac.authorization.k8s.io "gone" not found]`},
		{"no bindings", user("nobody"), "ns1", nil, ""},
		{"namespace without bindings", user("bob"), "ns3", []rbacv1.PolicyRule{deploy}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := a.RulesFor(tt.user, tt.namespace)
			if !equality.Semantic.DeepEqual(rules, tt.want) {
				t.Errorf("rules = %v, want %v", rules, tt.want)
			}
			if got := errString(err); got != tt.err {
				t.Errorf("error = %q, want %q", got, tt.err)
			}
		})
	}
}

func TestRoleRules(t *testing.T) {
	editCMs := rule(l("update"), l(""), l("configmaps"))
	readPods := rule(l("get"), l(""), l("pods"))
	a := newAuthorizer(role("ns1", "edit", editCMs), clusterRole("view", readPods))
	tests := []struct {
		name      string
		ref       rbacv1.RoleRef
		namespace string
		want      []rbacv1.PolicyRule
		err       string
		notFound  bool
	}{
		{"role", rbacv1.RoleRef{Kind: "Role", Name: "edit"}, "ns1", []rbacv1.PolicyRule{editCMs}, "", false},
		{"role of another namespace", rbacv1.RoleRef{Kind: "Role", Name: "edit"}, "ns2", nil,
			`roles.rbac.authorization.k8s.io "edit" not found`, true},
		{"cluster role", rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, "ns2", []rbacv1.PolicyRule{readPods}, "", false},
		{"cluster role for a cluster binding", rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, "", []rbacv1.PolicyRule{readPods}, "", false},
		{"missing cluster role", rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"}, "ns1", nil,
			`clusterroles.rbac.authorization.k8s.io "edit" not found`, true},
		{"unsupported kind", rbacv1.RoleRef{Kind: "Policy", Name: "edit"}, "ns1", nil,
			`unsupported role reference kind: "Policy"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := a.RoleRules(tt.ref, tt.namespace)
			if !equality.Semantic.DeepEqual(rules, tt.want) {
				t.Errorf("rules = %v, want %v", rules, tt.want)
			}
			if got := errString(err); got != tt.err {
				t.Errorf("error = %q, want %q", got, tt.err)
			}
			if apierrors.IsNotFound(err) != tt.notFound {
				t.Errorf("IsNotFound(%v) = %v, want %v", err, !tt.notFound, tt.notFound)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
