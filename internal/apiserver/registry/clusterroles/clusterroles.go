// Package clusterroles is the registry entry for
// rbac.authorization.k8s.io/v1 clusterroles.
package clusterroles

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/rbacutil"
)

// Resource returns the clusterroles entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   rbacv1.SchemeGroupVersion,
		Resource:       "clusterroles",
		Kind:           "ClusterRole",
		SingularName:   "clusterrole",
		New:            func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:        func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		NameValidation: registry.NamePathSegment,
		Validate:       validate,
		Columns:        rbacutil.CreatedAtColumns,
		Row: func(obj runtime.Object, _ time.Time) []interface{} {
			return rbacutil.CreatedAtRow(obj.(*rbacv1.ClusterRole).ObjectMeta)
		},
	}
}

func validate(obj runtime.Object) field.ErrorList {
	role := obj.(*rbacv1.ClusterRole)
	errs := rbacutil.ValidatePolicyRules(role.Rules, false)
	if role.AggregationRule == nil {
		return errs
	}
	p := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel := &role.AggregationRule.ClusterRoleSelectors[i]
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(p.Index(i), sel, "invalid label selector."))
		}
	}
	return errs
}
