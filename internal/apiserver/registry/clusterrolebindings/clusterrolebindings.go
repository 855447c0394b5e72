// Package clusterrolebindings is the registry entry for
// rbac.authorization.k8s.io/v1 clusterrolebindings.
package clusterrolebindings

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/rbacutil"
)

// Resource returns the clusterrolebindings entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   rbacv1.SchemeGroupVersion,
		Resource:       "clusterrolebindings",
		Kind:           "ClusterRoleBinding",
		SingularName:   "clusterrolebinding",
		New:            func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:        func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		NameValidation: registry.NamePathSegment,
		Default: func(obj runtime.Object) {
			b := obj.(*rbacv1.ClusterRoleBinding)
			rbacutil.DefaultBinding(&b.RoleRef, b.Subjects)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			b := obj.(*rbacv1.ClusterRoleBinding)
			errs := rbacutil.ValidateRoleRef(b.RoleRef, []string{"ClusterRole"})
			return append(errs, rbacutil.ValidateSubjects(b.Subjects, false)...)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return rbacutil.ValidateRoleRefUpdate(obj.(*rbacv1.ClusterRoleBinding).RoleRef, old.(*rbacv1.ClusterRoleBinding).RoleRef)
		},
		Columns: rbacutil.BindingColumns("clusterRoleBinding", rbacv1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]),
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			b := obj.(*rbacv1.ClusterRoleBinding)
			role, users, groups, sas := rbacutil.BindingCells(b.RoleRef, b.Subjects)
			return []interface{}{b.Name, role, registry.Age(b.CreationTimestamp, now), users, groups, sas}
		},
	}
}
