package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

func TestAuthorize(t *testing.T) {
	readPods := rule(l("get", "list", "watch"), l(""), l("pods"))
	a := newAuthorizer(
		clusterRole("pod-reader", readPods),
		clusterRole("node-reader", rule(l("get"), l(""), l("nodes"))),
		clusterRole("health", urls(l("get"), "/healthz", "/healthz/*")),
		clusterRole("secret-reader", rule(l("get"), l(""), l("secrets"))),
		clusterRole("deployer", rule(l("*"), l("apps"), l("deployments"))),
		role("ns1", "cm-editor", rule(l("update"), l(""), l("configmaps"))),
		role("ns2", "cm-editor", rule(l("*"), l("*"), l("*"))),

		// Cluster-wide.
		clusterBinding("readers", "pod-reader", groupSubject("readers"), userSubject("bob")),
		clusterBinding("nodes", "node-reader", userSubject("jane")),
		clusterBinding("health", "health", groupSubject(authz.AuthenticatedGroup)),
		clusterBinding("gone", "no-such-role", userSubject("carol")),
		clusterBinding("gone-too", "missing-as-well", userSubject("carol")),
		clusterBinding("sa-no-namespace", "secret-reader", saSubject("", "robot")),
		clusterBinding("sa-ns3", "secret-reader", saSubject("ns3", "robot")),
		clusterBinding("kinds", "secret-reader", rbacv1.Subject{Kind: "Robot", Name: "jane"}),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: clusterBinding("to-role", "", userSubject("erin")).ObjectMeta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-editor"},
			Subjects:   []rbacv1.Subject{userSubject("erin")},
		},

		// Namespaced.
		roleBinding("ns1", "edit", "Role", "cm-editor", userSubject("jane"), saSubject("", "robot")),
		roleBinding("ns1", "deploy", "ClusterRole", "deployer", saSubject("ns9", "builder")),
		roleBinding("ns1", "dangling", "Role", "no-such-role", userSubject("dave")),
		roleBinding("ns2", "read", "ClusterRole", "pod-reader", userSubject("dave")),
	)
	jane := user("jane", authz.AuthenticatedGroup)
	robot1 := serviceAccount("ns1", "robot")
	tests := []struct {
		name   string
		attrs  authz.Attributes
		want   authz.Decision
		reason string
	}{
		{"group subject", resourceRequest(user("x", "readers"), "list", "ns1", "", "pods", "", ""), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "readers"`},
		{"user subject after a group subject", resourceRequest(user("bob"), "get", "ns9", "", "pods", "", "p"), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to User "bob"`},
		{"first matching subject is named", resourceRequest(user("bob", "readers"), "get", "", "", "pods", "", ""), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "readers"`},
		{"cluster-scoped", resourceRequest(jane, "get", "", "", "nodes", "", "n1"), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to User "jane"`},
		{"verb not granted", resourceRequest(jane, "delete", "", "", "nodes", "", "n1"), authz.NoOpinion, ""},
		{"other user", resourceRequest(user("janet"), "get", "", "", "nodes", "", "n1"), authz.NoOpinion, ""},
		{"non-resource", pathRequest(jane, "get", "/healthz/etcd"), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated"`},
		{"non-resource other path", pathRequest(jane, "get", "/metrics"), authz.NoOpinion, ""},
		{"role binding to role", resourceRequest(jane, "update", "ns1", "", "configmaps", "", "c"), authz.Allow,
			`RBAC: allowed by RoleBinding "edit/ns1" of Role "cm-editor" to User "jane"`},
		{"role binding not in another namespace", resourceRequest(jane, "update", "ns2", "", "configmaps", "", "c"), authz.NoOpinion, ""},
		{"role binding not cluster-wide", resourceRequest(jane, "update", "", "", "configmaps", "", "c"), authz.NoOpinion, ""},
		{"service account defaults to the binding's namespace", resourceRequest(robot1, "update", "ns1", "", "configmaps", "", "c"), authz.Allow,
			`RBAC: allowed by RoleBinding "edit/ns1" of Role "cm-editor" to ServiceAccount "robot/ns1"`},
		{"service account of another namespace", resourceRequest(serviceAccount("ns2", "robot"), "update", "ns1", "", "configmaps", "", "c"), authz.NoOpinion, ""},
		{"service account named in a role binding", resourceRequest(serviceAccount("ns9", "builder"), "create", "ns1", "apps", "deployments", "", ""), authz.Allow,
			`RBAC: allowed by RoleBinding "deploy/ns1" of ClusterRole "deployer" to ServiceAccount "builder/ns9"`},
		{"cluster role bound in a namespace only there", resourceRequest(serviceAccount("ns9", "builder"), "create", "ns2", "apps", "deployments", "", ""), authz.NoOpinion, ""},
		{"service account without namespace in a cluster binding", resourceRequest(serviceAccount("", "robot"), "get", "ns1", "", "secrets", "", "s"), authz.NoOpinion, ""},
		{"service account in a cluster binding", resourceRequest(serviceAccount("ns3", "robot"), "get", "ns1", "", "secrets", "", "s"), authz.Allow,
			`RBAC: allowed by ClusterRoleBinding "sa-ns3" of ClusterRole "secret-reader" to ServiceAccount "robot/ns3"`},
		{"unknown subject kind", resourceRequest(jane, "get", "ns1", "", "secrets", "", "s"), authz.NoOpinion, ""},
		{"missing cluster roles", resourceRequest(user("carol"), "get", "ns1", "", "pods", "", ""), authz.NoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "no-such-role" not found, clusterrole.rbac.authorization.k8s.io "missing-as-well" not found]`},
		{"missing role", resourceRequest(user("dave"), "get", "ns1", "", "pods", "", ""), authz.NoOpinion,
			`RBAC: role.rbac.authorization.k8s.io "no-such-role" not found`},
		{"missing role in another namespace is not looked at", resourceRequest(user("dave"), "get", "ns2", "", "pods", "", "p"), authz.Allow,
			`RBAC: allowed by RoleBinding "read/ns2" of ClusterRole "pod-reader" to User "dave"`},
		{"cluster binding to a Role", resourceRequest(user("erin"), "update", "ns2", "", "configmaps", "", "c"), authz.NoOpinion,
			`RBAC: role.rbac.authorization.k8s.io "cm-editor" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tt.attrs)
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if d != tt.want || reason != tt.reason {
				t.Errorf("Authorize = %v, %q; want %v, %q", d, reason, tt.want, tt.reason)
			}
		})
	}
}

// An allowing rule wins over bindings whose role is missing: the error is
// only the reason when nothing allows.
func TestAuthorizeAllowsDespiteMissingRole(t *testing.T) {
	a := newAuthorizer(
		clusterRole("pod-reader", rule(l("get"), l(""), l("pods"))),
		clusterBinding("a-missing", "gone", userSubject("jane")),
		clusterBinding("b-readers", "pod-reader", userSubject("jane")),
	)
	d, reason, err := a.Authorize(context.Background(), resourceRequest(user("jane"), "get", "ns", "", "pods", "", "p"))
	want := `RBAC: allowed by ClusterRoleBinding "b-readers" of ClusterRole "pod-reader" to User "jane"`
	if d != authz.Allow || reason != want || err != nil {
		t.Errorf("Authorize = %v, %q, %v; want allow, %q", d, reason, err, want)
	}
}

// Bindings are visited in name order, whatever the order they came in.
func TestAuthorizeNamesBindingsInNameOrder(t *testing.T) {
	cr := clusterRole("pod-reader", rule(l("get"), l(""), l("pods")))
	attrs := resourceRequest(user("jane"), "get", "ns", "", "pods", "", "p")
	want := `RBAC: allowed by ClusterRoleBinding "a" of ClusterRole "pod-reader" to User "jane"`
	for _, order := range [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"b", "c", "a"}} {
		a := newAuthorizer(cr)
		for _, name := range order {
			a.Update(clusterBinding(name, "pod-reader", userSubject("jane")))
		}
		if _, reason, _ := a.Authorize(context.Background(), attrs); reason != want {
			t.Errorf("order %v: reason %q, want %q", order, reason, want)
		}
	}
}
