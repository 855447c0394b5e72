package rbacpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// Reconcile makes the cluster hold the policy, as upstream's apiserver does
// at start: it creates the roles and bindings that are missing and, on
// those whose autoupdate annotation is not "false", adds the rules,
// subjects, aggregation selectors, labels and annotations they lack,
// keeping whatever a user added. A binding whose roleRef differs is
// deleted and created again (a roleRef cannot change).
//
// It reads each kind with one list (per namespace for the namespaced
// kinds) and then writes only the differences, so it is cheap when nothing
// changed. It goes on past an object it cannot reconcile and returns every
// such error, each naming its object.
func Reconcile(ctx context.Context, client kubernetes.Interface) error {
	return errors.Join(
		reconcileClusterRoles(ctx, client, ClusterRoles()),
		reconcileClusterRoleBindings(ctx, client, ClusterRoleBindings()),
		reconcileRoles(ctx, client, Roles()),
		reconcileRoleBindings(ctx, client, RoleBindings()),
	)
}

func reconcileClusterRoles(ctx context.Context, client kubernetes.Interface, want []rbacv1.ClusterRole) error {
	list, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("rbac policy: cannot list cluster roles: %w", err)
	}
	m := clusterRoleModifier{ctx: ctx, client: client.RbacV1().ClusterRoles(), known: newKnown(list.Items, clusterRoleKey)}
	return each(want, func(r rbacv1.ClusterRole) error {
		return runRole(m, reconciliation.ClusterRoleRuleOwner{ClusterRole: r.DeepCopy()}, "ClusterRole", r.Name)
	})
}

func reconcileRoles(ctx context.Context, client kubernetes.Interface, want []rbacv1.Role) error {
	known := newKnown[rbacv1.Role](nil, roleKey)
	for _, ns := range namespacesOf(want, func(r rbacv1.Role) string { return r.Namespace }) {
		list, err := client.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("rbac policy: cannot list the roles of namespace %q: %w", ns, err)
		}
		known.add(list.Items)
	}
	m := roleModifier{ctx: ctx, client: client.RbacV1(), namespaces: newNamespaces(client), known: known}
	return each(want, func(r rbacv1.Role) error {
		return runRole(m, reconciliation.RoleRuleOwner{Role: r.DeepCopy()}, "Role", r.Namespace+"/"+r.Name)
	})
}

func reconcileClusterRoleBindings(ctx context.Context, client kubernetes.Interface, want []rbacv1.ClusterRoleBinding) error {
	list, err := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("rbac policy: cannot list cluster role bindings: %w", err)
	}
	m := clusterRoleBindingModifier{ctx: ctx, client: client.RbacV1().ClusterRoleBindings(), known: newKnown(list.Items, clusterRoleBindingKey)}
	return each(want, func(b rbacv1.ClusterRoleBinding) error {
		return runBinding(m, reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b.DeepCopy()}, "ClusterRoleBinding", b.Name)
	})
}

func reconcileRoleBindings(ctx context.Context, client kubernetes.Interface, want []rbacv1.RoleBinding) error {
	known := newKnown[rbacv1.RoleBinding](nil, roleBindingKey)
	for _, ns := range namespacesOf(want, func(b rbacv1.RoleBinding) string { return b.Namespace }) {
		list, err := client.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("rbac policy: cannot list the role bindings of namespace %q: %w", ns, err)
		}
		known.add(list.Items)
	}
	m := roleBindingModifier{ctx: ctx, client: client.RbacV1(), namespaces: newNamespaces(client), known: known}
	return each(want, func(b rbacv1.RoleBinding) error {
		return runBinding(m, reconciliation.RoleBindingAdapter{RoleBinding: b.DeepCopy()}, "RoleBinding", b.Namespace+"/"+b.Name)
	})
}

// runRole reconciles one role; a conflicting write (the object changed
// since the list) is tried again on a fresh read.
func runRole(m reconciliation.RuleOwnerModifier, want reconciliation.RuleOwner, kind, name string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		opts := reconciliation.ReconcileRoleOptions{Role: want.DeepCopyRuleOwner(), Client: m, Confirm: true}
		_, err := opts.Run()
		return err
	})
	if err != nil {
		return fmt.Errorf("rbac policy: cannot reconcile %s %q: %w", kind, name, err)
	}
	return nil
}

func runBinding(m reconciliation.RoleBindingModifier, want reconciliation.RoleBinding, kind, name string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		opts := reconciliation.ReconcileRoleBindingOptions{RoleBinding: want.DeepCopyRoleBinding(), Client: m, Confirm: true}
		_, err := opts.Run()
		return err
	})
	if err != nil {
		return fmt.Errorf("rbac policy: cannot reconcile %s %q: %w", kind, name, err)
	}
	return nil
}

// each calls f on every item and joins the errors.
func each[T any](items []T, f func(T) error) error {
	var errs []error
	for _, it := range items {
		if err := f(it); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func namespacesOf[T any](items []T, ns func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, ns(it))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
