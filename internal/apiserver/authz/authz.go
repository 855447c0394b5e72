// Package authz decides whether a request may proceed: the attributes of a
// request (who, which verb, on what), the one-method Authorizer every
// authorizer implements (Node, RBAC, the privileged group), and Union, which
// asks them in order as upstream's apiserver does. It also words the
// Forbidden message exactly as upstream does, so clients see the same text.
//
// The authorizers themselves live below: authz/rbac (roles and bindings)
// and authz/node (what a kubelet may read); the apiserver feeds them from
// its watch caches.
package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// InGroup reports whether u is in group.
func (u User) InGroup(group string) bool { return slices.Contains(u.Groups, group) }

// Well-known groups and users.
const (
	// SystemPrivilegedGroup (system:masters) is allowed everything, before
	// any authorizer is asked.
	SystemPrivilegedGroup = "system:masters"
	AuthenticatedGroup    = "system:authenticated"
	UnauthenticatedGroup  = "system:unauthenticated"
	Anonymous             = "system:anonymous"
	// NodesGroup and NodeUserPrefix name kubelets: system:node:NAME in system:nodes.
	NodesGroup     = "system:nodes"
	NodeUserPrefix = "system:node:"
	// ServiceAccountUserPrefix + NAMESPACE:NAME is a service account's user;
	// it is in ServiceAccountsGroup and ServiceAccountsGroup:NAMESPACE.
	ServiceAccountUserPrefix = "system:serviceaccount:"
	ServiceAccountsGroup     = "system:serviceaccounts"
)

// ServiceAccountUser is the user name of service account name in namespace.
func ServiceAccountUser(namespace, name string) string {
	return ServiceAccountUserPrefix + namespace + ":" + name
}

// ServiceAccountGroups are the groups of a service account in namespace
// (without system:authenticated).
func ServiceAccountGroups(namespace string) []string {
	return []string{ServiceAccountsGroup, ServiceAccountsGroup + ":" + namespace}
}

// SplitServiceAccount returns the namespace and name of a service account
// user; ok is false for other users.
func SplitServiceAccount(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, ServiceAccountUserPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// NodeName returns the node of a kubelet user (system:node:NAME in
// system:nodes); ok is false for anyone else.
func NodeName(u User) (string, bool) {
	name, ok := strings.CutPrefix(u.Name, NodeUserPrefix)
	if !ok || name == "" || !u.InGroup(NodesGroup) {
		return "", false
	}
	return name, true
}

// Attributes describe one request for authorization, as upstream's
// authorizer.Attributes do.
type Attributes struct {
	User User
	// Verb is get, list, watch, create, update, patch, delete,
	// deletecollection, or a special verb (impersonate, bind, escalate,
	// use, approve, sign); for non-resource requests the lower-case HTTP
	// method (get, post, put, patch, delete, head).
	Verb string
	// ResourceRequest is true for /api and /apis paths naming a resource.
	ResourceRequest bool
	Namespace       string
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Name            string
	// FieldSelector and LabelSelector are the selectors of a list, watch
	// or deletecollection, as the request gave them (the Node authorizer
	// lets a kubelet list only its own pods and Node).
	FieldSelector string
	LabelSelector string
	// Path is the request path of a non-resource request.
	Path string
}

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion lets the next authorizer decide; when none allows, the
	// request is forbidden.
	NoOpinion Decision = iota
	Allow
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "no opinion"
}

// Authorizer decides on one request. reason explains the decision (shown
// in a Forbidden message and in access reviews); err says the authorizer
// could not decide completely (the decision still stands).
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// Func adapts a function to Authorizer.
type Func func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f Func) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// Privileged allows every request of a user in group (system:masters).
func Privileged(group string) Authorizer {
	return Func(func(_ context.Context, a Attributes) (Decision, string, error) {
		if a.User.InGroup(group) {
			return Allow, "", nil
		}
		return NoOpinion, "", nil
	})
}

// Union asks each authorizer in turn; the first Allow or Deny is the
// answer. Otherwise the answer is NoOpinion with the reasons and errors of
// all of them joined, as upstream's union authorizer does.
func Union(authorizers ...Authorizer) Authorizer {
	return Func(func(ctx context.Context, a Attributes) (Decision, string, error) {
		var reasons []string
		var errs []error
		for _, z := range authorizers {
			d, reason, err := z.Authorize(ctx, a)
			if err != nil {
				errs = append(errs, err)
			}
			if d != NoOpinion {
				return d, reason, err
			}
			if reason != "" {
				reasons = append(reasons, reason)
			}
		}
		var err error
		if len(errs) > 0 {
			err = joinErrors(errs)
		}
		return NoOpinion, strings.Join(reasons, "\n"), err
	})
}

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("[%s]", strings.Join(msgs, ", "))
}

// ForbiddenMessage is upstream's wording of a refused request, e.g.
// `User "jane" cannot list resource "pods" in API group "" in the namespace "default"`.
func ForbiddenMessage(a Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", a.User.Name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", a.User.Name, a.Verb, resource, a.APIGroup)
}
