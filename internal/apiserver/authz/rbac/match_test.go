package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

func TestRuleAllows(t *testing.T) {
	u := user("jane")
	pods := rule(l("get", "list"), l(""), l("pods"))
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authz.Attributes
		want  bool
	}{
		{"exact", pods, resourceRequest(u, "get", "ns", "", "pods", "", "p"), true},
		{"other verb", pods, resourceRequest(u, "delete", "ns", "", "pods", "", "p"), false},
		{"other group", pods, resourceRequest(u, "get", "ns", "apps", "pods", "", "p"), false},
		{"other resource", pods, resourceRequest(u, "get", "ns", "", "secrets", "", "p"), false},
		{"resource does not grant its subresource", pods, resourceRequest(u, "get", "ns", "", "pods", "log", "p"), false},
		{"verb *", rule(l("*"), l(""), l("pods")), resourceRequest(u, "deletecollection", "ns", "", "pods", "", ""), true},
		{"group *", rule(l("get"), l("*"), l("deployments")), resourceRequest(u, "get", "ns", "apps", "deployments", "", "d"), true},
		{"resource *", rule(l("get"), l(""), l("*")), resourceRequest(u, "get", "ns", "", "secrets", "", "s"), true},
		{"resource * covers subresources", rule(l("get"), l(""), l("*")), resourceRequest(u, "get", "ns", "", "pods", "log", "p"), true},
		{"resource/subresource", rule(l("get"), l(""), l("pods/log")), resourceRequest(u, "get", "ns", "", "pods", "log", "p"), true},
		{"resource/subresource not the resource", rule(l("get"), l(""), l("pods/log")), resourceRequest(u, "get", "ns", "", "pods", "", "p"), false},
		{"resource/subresource other subresource", rule(l("get"), l(""), l("pods/log")), resourceRequest(u, "get", "ns", "", "pods", "exec", "p"), false},
		{"resource/subresource other resource", rule(l("get"), l(""), l("pods/log")), resourceRequest(u, "get", "ns", "", "nodes", "log", "p"), false},
		{"*/subresource", rule(l("update"), l("*"), l("*/status")), resourceRequest(u, "update", "ns", "apps", "deployments", "status", "d"), true},
		{"*/subresource other subresource", rule(l("update"), l("*"), l("*/status")), resourceRequest(u, "update", "ns", "apps", "deployments", "scale", "d"), false},
		{"*/subresource not the resource", rule(l("update"), l("*"), l("*/status")), resourceRequest(u, "update", "ns", "apps", "deployments", "", "d"), false},
		{"*/subresource longer subresource", rule(l("update"), l("*"), l("*/status")), resourceRequest(u, "update", "ns", "", "pods", "xstatus", "p"), false},
		{"resource name listed", withNames(pods, "a", "b"), resourceRequest(u, "get", "ns", "", "pods", "", "b"), true},
		{"resource name not listed", withNames(pods, "a", "b"), resourceRequest(u, "get", "ns", "", "pods", "", "c"), false},
		{"resource names and no name", withNames(pods, "a"), resourceRequest(u, "list", "ns", "", "pods", "", ""), false},
		{"no resource names and no name", pods, resourceRequest(u, "list", "ns", "", "pods", "", ""), true},
		{"cluster-scoped request", rule(l("get"), l(""), l("nodes")), resourceRequest(u, "get", "", "", "nodes", "", "n"), true},
		{"resource rule and path request", rule(l("*"), l("*"), l("*")), pathRequest(u, "get", "/healthz"), false},
		{"url rule and resource request", urls(l("*"), "*"), resourceRequest(u, "get", "ns", "", "pods", "", "p"), false},
		{"url *", urls(l("get"), "*"), pathRequest(u, "get", "/metrics"), true},
		{"url exact", urls(l("get"), "/healthz"), pathRequest(u, "get", "/healthz"), true},
		{"url exact other path", urls(l("get"), "/healthz"), pathRequest(u, "get", "/healthz/etcd"), false},
		{"url prefix", urls(l("get"), "/healthz/*"), pathRequest(u, "get", "/healthz/etcd"), true},
		{"url prefix itself with slash", urls(l("get"), "/healthz/*"), pathRequest(u, "get", "/healthz/"), true},
		{"url prefix not the bare path", urls(l("get"), "/healthz/*"), pathRequest(u, "get", "/healthz"), false},
		{"url prefix without slash", urls(l("get"), "/api*"), pathRequest(u, "get", "/apis/apps"), true},
		{"url other verb", urls(l("get"), "*"), pathRequest(u, "post", "/metrics"), false},
		{"url verb *", urls(l("*"), "/version"), pathRequest(u, "head", "/version"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ruleAllows(&tt.rule, &tt.attrs); got != tt.want {
				t.Errorf("ruleAllows(%+v, %+v) = %v, want %v", tt.rule, tt.attrs, got, tt.want)
			}
		})
	}
}

func withNames(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = names
	return r
}

func urls(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: urls}
}
