// Package roles is the registry entry for rbac.authorization.k8s.io/v1 roles.
package roles

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/rbacutil"
)

// Resource returns the roles entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   rbacv1.SchemeGroupVersion,
		Resource:       "roles",
		Kind:           "Role",
		SingularName:   "role",
		Namespaced:     true,
		New:            func() runtime.Object { return &rbacv1.Role{} },
		NewList:        func() runtime.Object { return &rbacv1.RoleList{} },
		NameValidation: registry.NamePathSegment,
		Validate: func(obj runtime.Object) field.ErrorList {
			return rbacutil.ValidatePolicyRules(obj.(*rbacv1.Role).Rules, true)
		},
		Columns: rbacutil.CreatedAtColumns,
		Row: func(obj runtime.Object, _ time.Time) []interface{} {
			return rbacutil.CreatedAtRow(obj.(*rbacv1.Role).ObjectMeta)
		},
	}
}
