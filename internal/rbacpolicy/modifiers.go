package rbacpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// The reconciliation package's own client adapters read every object with
// a GET of its own; these answer reads from one list made beforehand
// (known) and send only the writes to the apiserver. A write that finds the
// list out of date (a conflict, a create of what exists, an update of what
// is gone) makes the object's next read go to the apiserver.

var (
	_ reconciliation.RuleOwnerModifier   = clusterRoleModifier{}
	_ reconciliation.RuleOwnerModifier   = roleModifier{}
	_ reconciliation.RoleBindingModifier = clusterRoleBindingModifier{}
	_ reconciliation.RoleBindingModifier = roleBindingModifier{}
)

// known is what a list found of one kind, by namespace/name.
type known[T any] struct {
	objects map[string]*T
	key     func(*T) string
	// stale names objects the list no longer describes.
	stale map[string]bool
}

func newKnown[T any](items []T, key func(*T) string) *known[T] {
	k := &known[T]{objects: map[string]*T{}, key: key, stale: map[string]bool{}}
	k.add(items)
	return k
}

func (k *known[T]) add(items []T) {
	for i := range items {
		k.objects[k.key(&items[i])] = &items[i]
	}
}

// get returns the listed object, a NotFound error if the list had none, or
// what live reads once the list is stale for it.
func (k *known[T]) get(namespace, name string, gr schema.GroupResource, live func() (*T, error)) (*T, error) {
	key := namespace + "/" + name
	if k.stale[key] {
		return live()
	}
	if obj, ok := k.objects[key]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(gr, name)
}

// written marks the object stale when err shows the list out of date.
func (k *known[T]) written(namespace, name string, err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		k.stale[namespace+"/"+name] = true
	}
	return err
}

func clusterRoleKey(r *rbacv1.ClusterRole) string               { return "/" + r.Name }
func roleKey(r *rbacv1.Role) string                             { return r.Namespace + "/" + r.Name }
func clusterRoleBindingKey(b *rbacv1.ClusterRoleBinding) string { return "/" + b.Name }
func roleBindingKey(b *rbacv1.RoleBinding) string               { return b.Namespace + "/" + b.Name }

var (
	clusterRolesResource        = rbacv1.Resource("clusterroles")
	rolesResource               = rbacv1.Resource("roles")
	clusterRoleBindingsResource = rbacv1.Resource("clusterrolebindings")
	roleBindingsResource        = rbacv1.Resource("rolebindings")
)

type clusterRoleModifier struct {
	ctx    context.Context
	client rbacv1client.ClusterRoleInterface
	known  *known[rbacv1.ClusterRole]
}

func (m clusterRoleModifier) Get(_, name string) (reconciliation.RuleOwner, error) {
	r, err := m.known.get("", name, clusterRolesResource, func() (*rbacv1.ClusterRole, error) {
		return m.client.Get(m.ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: r.DeepCopy()}, nil
}

func (m clusterRoleModifier) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	r, err := m.client.Create(m.ctx, in.(reconciliation.ClusterRoleRuleOwner).ClusterRole, metav1.CreateOptions{})
	if err != nil {
		return nil, m.known.written("", in.GetName(), err)
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}, nil
}

func (m clusterRoleModifier) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	r, err := m.client.Update(m.ctx, in.(reconciliation.ClusterRoleRuleOwner).ClusterRole, metav1.UpdateOptions{})
	if err != nil {
		return nil, m.known.written("", in.GetName(), err)
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}, nil
}

type roleModifier struct {
	ctx        context.Context
	client     rbacv1client.RbacV1Interface
	namespaces *namespaces
	known      *known[rbacv1.Role]
}

func (m roleModifier) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	r, err := m.known.get(namespace, name, rolesResource, func() (*rbacv1.Role, error) {
		return m.client.Roles(namespace).Get(m.ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return reconciliation.RoleRuleOwner{Role: r.DeepCopy()}, nil
}

func (m roleModifier) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	if err := m.namespaces.ensure(m.ctx, in.GetNamespace()); err != nil {
		return nil, err
	}
	r, err := m.client.Roles(in.GetNamespace()).Create(m.ctx, in.(reconciliation.RoleRuleOwner).Role, metav1.CreateOptions{})
	if err != nil {
		return nil, m.known.written(in.GetNamespace(), in.GetName(), err)
	}
	return reconciliation.RoleRuleOwner{Role: r}, nil
}

func (m roleModifier) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	r, err := m.client.Roles(in.GetNamespace()).Update(m.ctx, in.(reconciliation.RoleRuleOwner).Role, metav1.UpdateOptions{})
	if err != nil {
		return nil, m.known.written(in.GetNamespace(), in.GetName(), err)
	}
	return reconciliation.RoleRuleOwner{Role: r}, nil
}

type clusterRoleBindingModifier struct {
	ctx    context.Context
	client rbacv1client.ClusterRoleBindingInterface
	known  *known[rbacv1.ClusterRoleBinding]
}

func (m clusterRoleBindingModifier) Get(_, name string) (reconciliation.RoleBinding, error) {
	b, err := m.known.get("", name, clusterRoleBindingsResource, func() (*rbacv1.ClusterRoleBinding, error) {
		return m.client.Get(m.ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b.DeepCopy()}, nil
}

func (m clusterRoleBindingModifier) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	b, err := m.client.Create(m.ctx, in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding, metav1.CreateOptions{})
	if err != nil {
		return nil, m.known.written("", in.GetName(), err)
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

func (m clusterRoleBindingModifier) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	b, err := m.client.Update(m.ctx, in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding, metav1.UpdateOptions{})
	if err != nil {
		return nil, m.known.written("", in.GetName(), err)
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

// Delete removes a binding whose roleRef must change; the UID makes sure
// it is the binding that was read.
func (m clusterRoleBindingModifier) Delete(_, name string, uid types.UID) error {
	err := m.client.Delete(m.ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	m.known.stale["/"+name] = true
	return err
}

type roleBindingModifier struct {
	ctx        context.Context
	client     rbacv1client.RbacV1Interface
	namespaces *namespaces
	known      *known[rbacv1.RoleBinding]
}

func (m roleBindingModifier) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	b, err := m.known.get(namespace, name, roleBindingsResource, func() (*rbacv1.RoleBinding, error) {
		return m.client.RoleBindings(namespace).Get(m.ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: b.DeepCopy()}, nil
}

func (m roleBindingModifier) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	if err := m.namespaces.ensure(m.ctx, in.GetNamespace()); err != nil {
		return nil, err
	}
	b, err := m.client.RoleBindings(in.GetNamespace()).Create(m.ctx, in.(reconciliation.RoleBindingAdapter).RoleBinding, metav1.CreateOptions{})
	if err != nil {
		return nil, m.known.written(in.GetNamespace(), in.GetName(), err)
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: b}, nil
}

func (m roleBindingModifier) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	b, err := m.client.RoleBindings(in.GetNamespace()).Update(m.ctx, in.(reconciliation.RoleBindingAdapter).RoleBinding, metav1.UpdateOptions{})
	if err != nil {
		return nil, m.known.written(in.GetNamespace(), in.GetName(), err)
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: b}, nil
}

func (m roleBindingModifier) Delete(namespace, name string, uid types.UID) error {
	err := m.client.RoleBindings(namespace).Delete(m.ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	m.known.stale[namespace+"/"+name] = true
	return err
}

// namespaces makes sure the namespace of a Role or RoleBinding exists
// before its first create (kube-public may not exist yet), once per
// namespace. A caller that may not read or create namespaces goes on: the
// create that follows says what is wrong.
type namespaces struct {
	client kubernetes.Interface
	done   map[string]bool
}

func newNamespaces(client kubernetes.Interface) *namespaces {
	return &namespaces{client: client, done: map[string]bool{}}
}

func (n *namespaces) ensure(ctx context.Context, name string) error {
	if n.done[name] {
		return nil
	}
	_, err := n.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = n.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil && !apierrors.IsForbidden(err) {
		return fmt.Errorf("cannot make sure namespace %q exists: %w", name, err)
	}
	n.done[name] = true
	return nil
}
