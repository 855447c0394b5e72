package node

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

func TestRulesAllow(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}},
		{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"*"}},
		{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/status"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"one"}},
	}
	tests := []struct {
		name  string
		attrs authz.Attributes
		want  bool
	}{
		{"exact", authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "pods"}, true},
		{"subresource named", authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "pods", Subresource: "log"}, true},
		{"subresource not named", authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "pods", Subresource: "exec"}, false},
		{"other verb", authz.Attributes{Verb: "list", ResourceRequest: true, Resource: "pods"}, false},
		{"other group", authz.Attributes{Verb: "get", ResourceRequest: true, APIGroup: "batch", Resource: "pods"}, false},
		{"wildcards", authz.Attributes{Verb: "delete", ResourceRequest: true, APIGroup: "apps", Resource: "deployments", Subresource: "scale"}, true},
		{"*/status", authz.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "batch", Resource: "jobs", Subresource: "status"}, true},
		{"*/status is not the object", authz.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "batch", Resource: "jobs"}, false},
		{"resource name", authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "configmaps", Name: "one"}, true},
		{"other resource name", authz.Attributes{Verb: "get", ResourceRequest: true, Resource: "configmaps", Name: "two"}, false},
		{"non-resource", authz.Attributes{Verb: "get", Path: "/api"}, false},
	}
	for _, tc := range tests {
		if got := rulesAllow(tc.attrs, rules); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRulesHaveNoWildcards keeps the node rules as narrow as upstream's:
// no rule grants every verb, group or resource.
func TestRulesHaveNoWildcards(t *testing.T) {
	for _, r := range Rules {
		for _, list := range [][]string{r.Verbs, r.APIGroups, r.Resources} {
			for _, s := range list {
				if s == "*" {
					t.Errorf("rule %v has a wildcard", r)
				}
			}
		}
	}
}
