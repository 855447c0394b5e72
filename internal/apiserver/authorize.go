package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/authz/node"
	"orch/internal/apiserver/authz/rbac"
	"orch/internal/apiserver/filters"
	"orch/internal/rbacpolicy"
)

// authorizers are the server's: system:masters, then Node, then RBAC, as
// upstream's --authorization-mode=Node,RBAC. The Node and RBAC authorizers
// hold what they need in memory, fed from the watch caches (feed.go).
type authorizers struct {
	rbac  *rbac.Authorizer
	node  *node.Authorizer
	chain authz.Authorizer
}

func newAuthorizers() *authorizers {
	a := &authorizers{rbac: rbac.New(), node: node.New()}
	a.chain = authz.Union(authz.Privileged(authz.SystemPrivilegedGroup), a.node, a.rbac)
	return a
}

// Authorizer is the server's authorizer chain (for the impersonation
// filter and the kubelet-facing reviews).
func (s *Server) Authorizer() authz.Authorizer { return s.authz.chain }

// requestAttributes are the attributes of r for its user: a resource
// request when info is one, the path otherwise.
func requestAttributes(r *http.Request, user authz.User, info requestInfo, isResource bool) authz.Attributes {
	if !isResource {
		return authz.Attributes{User: user, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	}
	a := authz.Attributes{User: user, Verb: info.Verb, ResourceRequest: true,
		Namespace: info.Namespace, APIGroup: info.GroupVersion.Group, APIVersion: info.GroupVersion.Version,
		Resource: info.Resource, Subresource: info.Subresource, Name: info.Name}
	if a.Resource == "namespaces" && a.Name != "" {
		// As upstream: a namespace is in itself, so a RoleBinding there can
		// grant reading it.
		a.Namespace = a.Name
	}
	switch a.Verb {
	case "list", "watch", "deletecollection":
		q := r.URL.Query()
		a.FieldSelector, a.LabelSelector = q.Get("fieldSelector"), q.Get("labelSelector")
		if a.Verb != "deletecollection" && a.FieldSelector != "" {
			// A list or watch of one name is authorized as that name, so
			// resourceNames rules can allow it (upstream's requestinfo).
			if sel, err := fields.ParseSelector(a.FieldSelector); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok {
					a.Name = name
				}
			}
		}
	}
	return a
}

// authorize answers 403 (and false) unless the request's user may make it.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, a authz.Attributes) bool {
	d, reason, err := s.authz.chain.Authorize(r.Context(), a)
	auditDecision(r.Context(), d == authz.Allow, reason)
	if d == authz.Allow {
		return true
	}
	if err != nil {
		s.log.Debug("authorization had errors", "user", a.User.Name, "err", err)
	}
	if rbacpolicy.IsComponent(a.User.Name) {
		// orch's own components act under the bootstrap policy: once the
		// authorizers hold the roles, a refusal means the policy lacks a
		// rule. Before that (a server starting) it is expected: the
		// component retries.
		logf := s.log.Warn
		msg := "refused a request of an orch component: the bootstrap policy lacks a rule"
		if !s.authorizersSynced() {
			logf, msg = s.log.Debug, "an orch component was refused before the authorizers' caches synced"
		}
		logf(msg, "user", a.User.Name, "verb", a.Verb, "resource", a.Resource, "subresource", a.Subresource, "namespace", a.Namespace, "path", a.Path)
	}
	s.respondError(w, r, forbidden(a, reason), schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name)
	return false
}

// authorizersSynced says whether the authorizers hold what the watch
// caches held when they started.
func (s *Server) authorizersSynced() bool {
	select {
	case <-s.authzSynced:
		return true
	default:
		return false
	}
}

// forbidden is upstream's 403 for refused attributes.
func forbidden(a authz.Attributes, reason string) error {
	msg := authz.ForbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	if !a.ResourceRequest {
		return apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(msg))
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, errors.New(msg))
}

// allowed asks the chain about a, for checks inside handlers (escalate,
// bind, impersonate).
func (s *Server) allowed(ctx context.Context, a authz.Attributes) bool {
	d, _, _ := s.authz.chain.Authorize(ctx, a)
	return d == authz.Allow
}

// checkRBACEscalation is upstream's escalation prevention for a Role,
// ClusterRole, RoleBinding or ClusterRoleBinding being written: the writer
// must hold every permission the object grants, or have escalate (roles)
// or bind (bindings) on it, or be in system:masters.
func (s *Server) checkRBACEscalation(ctx context.Context, obj any) error {
	user, ok := filters.UserFrom(ctx)
	if !ok || user.InGroup(authz.SystemPrivilegedGroup) {
		return nil
	}
	gr := func(resource string) schema.GroupResource { return rbacv1.Resource(resource) }
	special := func(verb, resource, namespace, name string) bool {
		return s.allowed(ctx, authz.Attributes{User: user, Verb: verb, ResourceRequest: true, APIGroup: rbacv1.GroupName,
			APIVersion: "v1", Resource: resource, Namespace: namespace, Name: name})
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		if special("escalate", "roles", o.Namespace, o.Name) {
			return nil
		}
		if err := s.authz.rbac.ConfirmNoEscalation(user, o.Namespace, o.Rules); err != nil {
			return apierrors.NewForbidden(gr("roles"), o.Name, err)
		}
	case *rbacv1.ClusterRole:
		if special("escalate", "clusterroles", "", o.Name) {
			return nil
		}
		if o.AggregationRule != nil {
			// The aggregated rules are not known yet: only someone who holds
			// everything may aggregate, as upstream.
			all := []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, {Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
			if err := s.authz.rbac.ConfirmNoEscalation(user, "", all); err != nil {
				return apierrors.NewForbidden(gr("clusterroles"), o.Name, fmt.Errorf("must have cluster-admin privileges to use the aggregationRule"))
			}
		}
		if err := s.authz.rbac.ConfirmNoEscalation(user, "", o.Rules); err != nil {
			return apierrors.NewForbidden(gr("clusterroles"), o.Name, err)
		}
	case *rbacv1.RoleBinding:
		return s.checkBind(user, special, gr("rolebindings"), o.Name, o.Namespace, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return s.checkBind(user, special, gr("clusterrolebindings"), o.Name, "", o.RoleRef)
	}
	return nil
}

// checkBind lets a binding to ref in namespace be written by a user with
// bind on the role, or who holds every rule of it.
func (s *Server) checkBind(user authz.User, special func(verb, resource, namespace, name string) bool, gr schema.GroupResource, name, namespace string, ref rbacv1.RoleRef) error {
	// As upstream, bind is asked in the binding's namespace, for cluster
	// roles too (a RoleBinding may grant bind on a ClusterRole there).
	roleResource := "clusterroles"
	if ref.Kind == "Role" {
		roleResource = "roles"
	}
	if special("bind", roleResource, namespace, ref.Name) {
		return nil
	}
	rules, err := s.authz.rbac.RoleRules(ref, namespace)
	if err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if err := s.authz.rbac.ConfirmNoEscalation(user, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}
