package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

// controllers are upstream's controller identities, each with a
// ClusterRole system:controller:NAME bound to kube-system/NAME.
var controllers = []string{
	"attachdetach-controller", "clusterrole-aggregation-controller", "cronjob-controller",
	"daemon-set-controller", "deployment-controller", "disruption-controller",
	"endpoint-controller", "endpointslice-controller", "endpointslicemirroring-controller",
	"expand-controller", "ephemeral-volume-controller", "generic-garbage-collector",
	"horizontal-pod-autoscaler", "job-controller", "namespace-controller", "node-controller",
	"persistent-volume-binder", "pod-garbage-collector", "replicaset-controller",
	"replication-controller", "resourcequota-controller", "route-controller",
	"service-account-controller", "service-controller", "statefulset-controller",
	"ttl-controller", "certificate-controller", "pvc-protection-controller",
	"pv-protection-controller", "ttl-after-finished-controller", "root-ca-cert-publisher",
	"validatingadmissionpolicy-status-controller", "legacy-service-account-token-cleaner",
	"selinux-warning-controller", "service-cidrs-controller", "resource-claim-controller",
}

// benchPolicy is about the size of upstream's bootstrap policy: ~70
// ClusterRoles with a few rules each, ~60 ClusterRoleBindings (mostly one
// service account or group each), and RoleBindings in a few namespaces,
// one of them for the service account default/app.
func benchPolicy() *Authorizer {
	a := New()
	add := func(role *rbacv1.ClusterRole, subjects ...rbacv1.Subject) {
		a.Update(role)
		if len(subjects) > 0 {
			a.Update(clusterBinding(role.Name, role.Name, subjects...))
		}
	}
	read := l("get", "list", "watch")
	write := l("create", "update", "patch", "delete")
	add(clusterRole("cluster-admin", rule(l("*"), l("*"), l("*")), urls(l("*"), "*")), groupSubject(authz.SystemPrivilegedGroup))
	add(clusterRole("system:discovery", urls(l("get"), "/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/")),
		groupSubject(authz.AuthenticatedGroup))
	add(clusterRole("system:basic-user",
		rule(l("create"), l("authorization.k8s.io"), l("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
		rule(l("create"), l("authentication.k8s.io"), l("selfsubjectreviews"))), groupSubject(authz.AuthenticatedGroup))
	add(clusterRole("system:public-info-viewer", urls(l("get"), "/healthz", "/livez", "/readyz", "/version", "/version/")),
		groupSubject(authz.AuthenticatedGroup), groupSubject(authz.UnauthenticatedGroup))
	add(clusterRole("system:service-account-issuer-discovery", urls(l("get"), "/.well-known/openid-configuration", "/openid/v1/jwks")),
		groupSubject(authz.ServiceAccountsGroup))
	add(clusterRole("system:monitoring", urls(l("get"), "/metrics", "/metrics/slis", "/livez/*", "/readyz/*", "/healthz/*")),
		groupSubject("system:monitoring"))
	add(clusterRole("system:node-proxier",
		rule(read, l(""), l("services", "endpoints", "nodes")),
		rule(read, l("discovery.k8s.io"), l("endpointslices")),
		rule(l("create", "patch", "update"), l("", "events.k8s.io"), l("events"))), userSubject("system:kube-proxy"))
	add(clusterRole("system:kube-scheduler",
		rule(l("create", "patch", "update"), l("", "events.k8s.io"), l("events")),
		rule(l("create"), l("coordination.k8s.io"), l("leases")),
		withNames(rule(l("get", "update"), l("coordination.k8s.io"), l("leases")), "kube-scheduler"),
		rule(append(read, "delete"), l(""), l("pods")),
		rule(l("create"), l(""), l("pods/binding", "bindings")),
		rule(l("patch", "update"), l(""), l("pods/status")),
		rule(read, l(""), l("nodes", "namespaces", "services", "persistentvolumeclaims", "persistentvolumes", "replicationcontrollers")),
		rule(read, l("apps"), l("replicasets", "statefulsets")),
		rule(read, l("storage.k8s.io"), l("storageclasses", "csinodes", "csidrivers", "csistoragecapacities"))),
		userSubject("system:kube-scheduler"))
	add(clusterRole("system:kube-controller-manager",
		rule(l("create", "patch", "update"), l("", "events.k8s.io"), l("events")),
		rule(l("create"), l("coordination.k8s.io"), l("leases")),
		rule(l("create"), l(""), l("secrets", "serviceaccounts")),
		rule(l("delete"), l(""), l("secrets")),
		rule(l("get"), l(""), l("namespaces", "secrets", "serviceaccounts", "configmaps")),
		rule(l("create"), l(""), l("serviceaccounts/token")),
		rule(read, l("*"), l("*"))), userSubject("system:kube-controller-manager"))
	add(clusterRole("system:node", rule(read, l(""), l("pods", "nodes", "services", "endpoints")),
		rule(write, l(""), l("nodes", "nodes/status", "pods/status", "pods/eviction")),
		rule(l("get"), l(""), l("secrets", "configmaps", "persistentvolumeclaims", "persistentvolumes"))))
	add(clusterRole("system:node-bootstrapper", rule(l("create", "get", "list", "watch"), l("certificates.k8s.io"), l("certificatesigningrequests"))),
		groupSubject("system:bootstrappers"))
	add(clusterRole("system:volume-scheduler", rule(l("get", "list", "watch", "patch", "update"), l(""), l("persistentvolumes")),
		rule(read, l("storage.k8s.io"), l("storageclasses"))), userSubject("system:kube-scheduler"))
	add(clusterRole("system:kube-dns", rule(l("list", "watch"), l(""), l("endpoints", "services"))), saSubject("kube-system", "kube-dns"))
	add(clusterRole("system:auth-delegator", rule(l("create"), l("authentication.k8s.io"), l("tokenreviews")),
		rule(l("create"), l("authorization.k8s.io"), l("subjectaccessreviews"))))
	add(clusterRole("system:heapster", rule(read, l(""), l("events", "namespaces", "nodes", "pods")), rule(read, l("apps"), l("deployments"))))
	add(clusterRole("system:kubelet-api-admin", rule(l("*"), l(""), l("nodes/proxy", "nodes/log", "nodes/stats", "nodes/metrics", "nodes/spec"))))
	add(clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
		rule(l("create"), l("certificates.k8s.io"), l("certificatesigningrequests/nodeclient"))))
	add(clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
		rule(l("create"), l("certificates.k8s.io"), l("certificatesigningrequests/selfnodeclient"))))
	add(clusterRole("view", rule(read, l(""), l("pods", "pods/log", "pods/status", "services", "endpoints", "configmaps", "persistentvolumeclaims", "replicationcontrollers", "events", "limitranges", "resourcequotas", "serviceaccounts", "namespaces")),
		rule(read, l("apps"), l("deployments", "replicasets", "statefulsets", "daemonsets", "controllerrevisions")),
		rule(read, l("batch"), l("jobs", "cronjobs")),
		rule(read, l("networking.k8s.io"), l("ingresses", "networkpolicies")),
		rule(read, l("discovery.k8s.io"), l("endpointslices")),
		rule(read, l("policy"), l("poddisruptionbudgets")),
		rule(read, l("autoscaling"), l("horizontalpodautoscalers"))))
	add(clusterRole("edit", rule(append(read, write...), l(""), l("pods", "pods/exec", "pods/attach", "pods/portforward", "services", "endpoints", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers", "serviceaccounts")),
		rule(append(read, write...), l("apps"), l("deployments", "deployments/scale", "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale", "daemonsets")),
		rule(append(read, write...), l("batch"), l("jobs", "cronjobs")),
		rule(append(read, write...), l("networking.k8s.io"), l("ingresses", "networkpolicies")),
		rule(append(read, write...), l("policy"), l("poddisruptionbudgets")),
		rule(append(read, write...), l("autoscaling"), l("horizontalpodautoscalers"))))
	add(clusterRole("admin", rule(l("*"), l("", "apps", "batch", "networking.k8s.io", "policy", "autoscaling"), l("*")),
		rule(l("*"), l("rbac.authorization.k8s.io"), l("roles", "rolebindings"))))
	for _, c := range controllers {
		add(clusterRole("system:controller:"+c,
			rule(l("create", "patch", "update"), l("", "events.k8s.io"), l("events")),
			rule(read, l(""), l("pods", "nodes")),
			rule(append(read, write...), l("apps", "batch"), l(c+"s")),
			rule(l("update"), l("apps", "batch"), l(c+"s/status", c+"s/finalizers")),
			withNames(rule(l("get", "update"), l("coordination.k8s.io"), l("leases")), c)),
			saSubject("kube-system", c))
	}
	a.Update(clusterBinding("system:kube-apiserver-kubelet", "system:kubelet-api-admin", userSubject("system:kube-apiserver")))
	a.Update(clusterBinding("kubelet-bootstrap", "system:node-bootstrapper", groupSubject("system:bootstrappers:orch")))
	a.Update(clusterBinding("node-autoapprove", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", groupSubject("system:bootstrappers")))
	a.Update(clusterBinding("node-autoapprove-renew", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", groupSubject(authz.NodesGroup)))
	for i := range 8 { // add-ons and operators, as installed by charts
		a.Update(clusterBinding(fmt.Sprintf("addon-%d", i), "view", saSubject(fmt.Sprintf("addon-%d", i), "operator"), userSubject(fmt.Sprintf("ops-%d", i))))
	}
	for i := range 14 { // aggregated roles without bindings
		a.Update(clusterRole(fmt.Sprintf("system:aggregate-to-%d", i), rule(read, l(fmt.Sprintf("group%d.example.com", i)), l("things"))))
	}
	for _, ns := range []string{"default", "kube-system", "team-a", "team-b"} {
		for i := range 5 {
			a.Update(roleBinding(ns, fmt.Sprintf("%s-user-%d", ns, i), "ClusterRole", "view", userSubject(fmt.Sprintf("user-%d", i))))
		}
	}
	a.Update(roleBinding("default", "app-edit", "ClusterRole", "edit", saSubject("", "app")))
	return a
}

func TestBenchPolicy(t *testing.T) {
	a := benchPolicy()
	if n := len(a.clusterBindings); n < 55 || n > 65 {
		t.Errorf("%d cluster role bindings, want about 60", n)
	}
	if n := len(a.clusterRoles); n < 65 || n > 75 {
		t.Errorf("%d cluster roles, want about 70", n)
	}
	for _, c := range benchCases() {
		if d, _, _ := a.Authorize(context.Background(), c.attrs); d != c.want {
			t.Errorf("%s: %v, want %v", c.name, d, c.want)
		}
	}
}

type benchCase struct {
	name  string
	attrs authz.Attributes
	want  authz.Decision
}

func benchCases() []benchCase {
	app := serviceAccount("default", "app")
	rs := serviceAccount("kube-system", "replicaset-controller")
	return []benchCase{
		{"service account by role binding", resourceRequest(app, "get", "default", "", "configmaps", "", "settings"), authz.Allow},
		{"service account refused", resourceRequest(app, "list", "default", "", "nodes", "", ""), authz.NoOpinion},
		{"controller by cluster binding", resourceRequest(rs, "update", "kube-system", "apps", "replicaset-controllers", "status", "web"), authz.Allow},
		{"non-resource", pathRequest(app, "get", "/apis/apps/v1"), authz.Allow},
	}
}

func BenchmarkAuthorize(b *testing.B) {
	a := benchPolicy()
	ctx := context.Background()
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := a.Authorize(ctx, c.attrs); d != c.want {
					b.Fatalf("%v, want %v", d, c.want)
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		c := benchCases()[0]
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				a.Authorize(ctx, c.attrs)
			}
		})
	})
}
