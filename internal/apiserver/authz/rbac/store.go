package rbac

import (
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch/internal/apiserver/authz"
)

// Authorizer answers requests from the roles and bindings it was given.
// It is safe for concurrent use.
type Authorizer struct {
	mu           sync.RWMutex
	roles        map[roleKey][]rbacv1.PolicyRule
	clusterRoles map[string][]rbacv1.PolicyRule
	// clusterBindings and the slices of bindings are sorted by name, so
	// that the binding named in a reason does not depend on arrival order.
	clusterBindings []*binding
	bindings        map[string][]*binding // by namespace
}

var _ authz.Authorizer = (*Authorizer)(nil)

type roleKey struct{ namespace, name string }

// binding is a RoleBinding or ClusterRoleBinding prepared for matching:
// each subject reduced to the one string a user must present, and the
// reason an allowed request gets already worded.
type binding struct {
	name      string
	namespace string // "" for a ClusterRoleBinding
	roleRef   rbacv1.RoleRef
	subjects  []subject
}

type subject struct {
	match  matchKind
	value  string // user name or group name
	reason string // "RBAC: allowed by …"
}

type matchKind uint8

const (
	matchNone  matchKind = iota // never applies (unknown kind, service account without namespace)
	matchUser                   // User and ServiceAccount subjects: the user's name
	matchGroup                  // Group subjects: one of the user's groups
)

// New returns an Authorizer that holds no roles or bindings, and so allows
// nothing until it is fed.
func New() *Authorizer {
	return &Authorizer{
		roles:        map[roleKey][]rbacv1.PolicyRule{},
		clusterRoles: map[string][]rbacv1.PolicyRule{},
		bindings:     map[string][]*binding{},
	}
}

// Update adds obj (a *rbacv1.Role, ClusterRole, RoleBinding or
// ClusterRoleBinding) or replaces the one of the same namespace and name.
// Other types are ignored.
func (a *Authorizer) Update(obj any) {
	switch o := obj.(type) {
	case *rbacv1.Role:
		a.mu.Lock()
		a.roles[roleKey{o.Namespace, o.Name}] = o.Rules
		a.mu.Unlock()
	case *rbacv1.ClusterRole:
		a.mu.Lock()
		a.clusterRoles[o.Name] = o.Rules
		a.mu.Unlock()
	case *rbacv1.RoleBinding:
		b := newBinding(o.Name, o.Namespace, o.RoleRef, o.Subjects)
		a.mu.Lock()
		a.bindings[o.Namespace] = upsert(a.bindings[o.Namespace], b)
		a.mu.Unlock()
	case *rbacv1.ClusterRoleBinding:
		b := newBinding(o.Name, "", o.RoleRef, o.Subjects)
		a.mu.Lock()
		a.clusterBindings = upsert(a.clusterBindings, b)
		a.mu.Unlock()
	}
}

// Delete removes obj (matched by kind, namespace and name). Other types
// are ignored.
func (a *Authorizer) Delete(obj any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch o := obj.(type) {
	case *rbacv1.Role:
		delete(a.roles, roleKey{o.Namespace, o.Name})
	case *rbacv1.ClusterRole:
		delete(a.clusterRoles, o.Name)
	case *rbacv1.RoleBinding:
		if rest := remove(a.bindings[o.Namespace], o.Name); len(rest) > 0 {
			a.bindings[o.Namespace] = rest
		} else {
			delete(a.bindings, o.Namespace)
		}
	case *rbacv1.ClusterRoleBinding:
		a.clusterBindings = remove(a.clusterBindings, o.Name)
	}
}

func compareName(b *binding, name string) int { return strings.Compare(b.name, name) }

// upsert returns list (sorted by name) with b added, or in place of the
// binding of the same name.
func upsert(list []*binding, b *binding) []*binding {
	i, found := slices.BinarySearchFunc(list, b.name, compareName)
	if found {
		list[i] = b
		return list
	}
	return slices.Insert(list, i, b)
}

// remove returns list without the binding called name.
func remove(list []*binding, name string) []*binding {
	if i, found := slices.BinarySearchFunc(list, name, compareName); found {
		return slices.Delete(list, i, i+1)
	}
	return list
}
