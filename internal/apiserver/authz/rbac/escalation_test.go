package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

func TestConfirmNoEscalation(t *testing.T) {
	a := newAuthorizer(
		clusterRole("pod-reader", rule(l("get", "list"), l(""), l("pods"))),
		clusterRole("health", urls(l("get"), "/healthz/*")),
		clusterRole("admin", rule(l("*"), l("*"), l("*"))),
		role("ns1", "cm", withNames(rule(l("get"), l(""), l("configmaps")), "a")),
		clusterBinding("readers", "pod-reader", groupSubject("devs")),
		clusterBinding("health", "health", groupSubject("devs")),
		clusterBinding("gone", "no-such-role", userSubject("carol")),
		roleBinding("ns1", "cm", "Role", "cm", groupSubject("devs")),
		roleBinding("ns2", "admin", "ClusterRole", "admin", userSubject("jane")),
	)
	jane := user("jane", "devs", authz.AuthenticatedGroup)
	const head = `user "jane" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n"
	tests := []struct {
		name      string
		user      authz.User
		namespace string
		rules     []rbacv1.PolicyRule
		want      string
	}{
		{"nothing asked", jane, "", nil, ""},
		{"held", jane, "", []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, ""},
		{"held with a name", jane, "ns1", []rbacv1.PolicyRule{withNames(rule(l("get", "list"), l(""), l("pods")), "p")}, ""},
		{"held url", jane, "", []rbacv1.PolicyRule{urls(l("get"), "/healthz/etcd")}, ""},
		{"held in the namespace", jane, "ns2", []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*")), urls(l("get"), "/healthz/*")}, ""},
		{"missing verb", jane, "", []rbacv1.PolicyRule{rule(l("get", "watch"), l(""), l("pods"))},
			head + `{APIGroups:[""], Resources:["pods"], Verbs:["watch"]}`},
		{"missing verbs compacted", jane, "ns1", []rbacv1.PolicyRule{rule(l("get", "create", "delete"), l("", "apps"), l("pods", "configmaps"))},
			head + `{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "create" "delete"]}` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["create" "delete"]}` + "\n" +
				`{APIGroups:["apps"], Resources:["configmaps"], Verbs:["get" "create" "delete"]}` + "\n" +
				`{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "create" "delete"]}`},
		{"missing names", jane, "ns1", []rbacv1.PolicyRule{withNames(rule(l("get"), l(""), l("configmaps")), "a", "b", "c")},
			head + `{APIGroups:[""], Resources:["configmaps"], ResourceNames:["b"], Verbs:["get"]}` + "\n" +
				`{APIGroups:[""], Resources:["configmaps"], ResourceNames:["c"], Verbs:["get"]}`},
		{"namespace's role not held elsewhere", jane, "ns3", []rbacv1.PolicyRule{withNames(rule(l("get"), l(""), l("configmaps")), "a")},
			head + `{APIGroups:[""], Resources:["configmaps"], ResourceNames:["a"], Verbs:["get"]}`},
		{"missing url", jane, "", []rbacv1.PolicyRule{urls(l("get", "post"), "/healthz/*", "/metrics")},
			head + `{NonResourceURLs:["/healthz/*"], Verbs:["post"]}` + "\n" +
				`{NonResourceURLs:["/metrics"], Verbs:["get"]}` + "\n" +
				`{NonResourceURLs:["/metrics"], Verbs:["post"]}`},
		{"resolution errors", user("carol"), "", []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))},
			`user "carol" (groups=[]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["get"]}` +
				`; resolution errors: [clusterroles.rbac.authorization.k8s.io "no-such-role" not found]`},
		{"resolution errors do not matter when held", user("carol"), "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.ConfirmNoEscalation(tt.user, tt.namespace, tt.rules)
			if got := errString(err); got != tt.want {
				t.Errorf("ConfirmNoEscalation = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestCompactString(t *testing.T) {
	tests := []struct {
		rule rbacv1.PolicyRule
		want string
	}{
		{rule(l("get", "list"), l(""), l("pods")), `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{withNames(rule(l("get"), l("apps"), l("deployments/scale")), "web"), `{APIGroups:["apps"], Resources:["deployments/scale"], ResourceNames:["web"], Verbs:["get"]}`},
		{urls(l("get"), "/healthz", "/livez"), `{NonResourceURLs:["/healthz" "/livez"], Verbs:["get"]}`},
		{rbacv1.PolicyRule{}, `{}`},
	}
	for _, tt := range tests {
		if got := compactString(tt.rule); got != tt.want {
			t.Errorf("compactString(%+v) = %s, want %s", tt.rule, got, tt.want)
		}
	}
}
