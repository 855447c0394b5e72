// Package rolebindings is the registry entry for
// rbac.authorization.k8s.io/v1 rolebindings.
package rolebindings

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/rbacutil"
)

// Resource returns the rolebindings entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   rbacv1.SchemeGroupVersion,
		Resource:       "rolebindings",
		Kind:           "RoleBinding",
		SingularName:   "rolebinding",
		Namespaced:     true,
		New:            func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:        func() runtime.Object { return &rbacv1.RoleBindingList{} },
		NameValidation: registry.NamePathSegment,
		Default: func(obj runtime.Object) {
			b := obj.(*rbacv1.RoleBinding)
			rbacutil.DefaultBinding(&b.RoleRef, b.Subjects)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			b := obj.(*rbacv1.RoleBinding)
			errs := rbacutil.ValidateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"})
			return append(errs, rbacutil.ValidateSubjects(b.Subjects, true)...)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return rbacutil.ValidateRoleRefUpdate(obj.(*rbacv1.RoleBinding).RoleRef, old.(*rbacv1.RoleBinding).RoleRef)
		},
		Columns: rbacutil.BindingColumns("roleBinding", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			b := obj.(*rbacv1.RoleBinding)
			role, users, groups, sas := rbacutil.BindingCells(b.RoleRef, b.Subjects)
			return []interface{}{b.Name, role, registry.Age(b.CreationTimestamp, now), users, groups, sas}
		},
	}
}
