// Package poddisruptionbudgets is the registry entry for policy/v1
// poddisruptionbudgets.
package poddisruptionbudgets

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/workloadutil"
)

var evictionPolicies = []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}

// Resource returns the poddisruptionbudgets entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: policyv1.SchemeGroupVersion,
		Resource:     "poddisruptionbudgets",
		Kind:         "PodDisruptionBudget",
		SingularName: "poddisruptionbudget",
		Namespaced:   true,
		ShortNames:   []string{"pdb"},
		New:          func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList:      func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		HasStatus:    true,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
		},
		Validate: validate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Min Available", Type: "string", Description: "The minimum number of pods that must be available."},
			{Name: "Max Unavailable", Type: "string", Description: "The maximum number of pods that may be unavailable."},
			{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			pdb := obj.(*policyv1.PodDisruptionBudget)
			return []interface{}{pdb.Name, orNA(pdb.Spec.MinAvailable), orNA(pdb.Spec.MaxUnavailable),
				int64(pdb.Status.DisruptionsAllowed), registry.Age(pdb.CreationTimestamp, now)}
		},
	}
}

func orNA(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}

func validate(obj runtime.Object) field.ErrorList {
	spec := obj.(*policyv1.PodDisruptionBudget).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(p, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		errs = append(errs, workloadutil.ValidateIntOrPercent(*spec.MinAvailable, p.Child("minAvailable"))...)
		errs = append(errs, workloadutil.NotMoreThan100Percent(*spec.MinAvailable, p.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		errs = append(errs, workloadutil.ValidateIntOrPercent(*spec.MaxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, workloadutil.NotMoreThan100Percent(*spec.MaxUnavailable, p.Child("maxUnavailable"))...)
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	if pol := spec.UnhealthyPodEvictionPolicy; pol != nil && *pol != policyv1.AlwaysAllow && *pol != policyv1.IfHealthyBudget {
		errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *pol, evictionPolicies))
	}
	return errs
}
