package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

// ruleAllows reports whether rule allows the request: for a resource
// request its verbs, API groups, resources and resource names must match;
// for a non-resource request its verbs and non-resource URLs.
func ruleAllows(rule *rbacv1.PolicyRule, a *authz.Attributes) bool {
	if !verbMatches(rule.Verbs, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return urlMatches(rule.NonResourceURLs, a.Path)
	}
	return groupMatches(rule.APIGroups, a.APIGroup) &&
		resourceMatches(rule.Resources, a.Resource, a.Subresource) &&
		nameMatches(rule.ResourceNames, a.Name)
}

func verbMatches(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb || v == rbacv1.VerbAll {
			return true
		}
	}
	return false
}

func groupMatches(groups []string, group string) bool {
	for _, g := range groups {
		if g == group || g == rbacv1.APIGroupAll {
			return true
		}
	}
	return false
}

// resourceMatches matches "*", the resource itself when there is no
// subresource, "resource/subresource", and "*/subresource".
func resourceMatches(resources []string, resource, subresource string) bool {
	for _, r := range resources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		head, tail, ok := strings.Cut(r, "/")
		if ok && tail == subresource && (head == resource || head == "*") {
			return true
		}
	}
	return false
}

// nameMatches: a rule without resource names matches every name (and
// requests without a name); otherwise the name must be listed.
func nameMatches(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// urlMatches matches "*", the path itself, and a prefix ending in "*"
// (e.g. "/healthz/*" or "/api*").
func urlMatches(urls []string, path string) bool {
	for _, u := range urls {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
