// Package mutatingadmissionpolicybindings is the registry entry for
// admissionregistration.k8s.io/v1 mutatingadmissionpolicybindings, with
// upstream's defaults, validation and table.
package mutatingadmissionpolicybindings

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/admissionregutil"
)

// Resource returns the mutatingadmissionpolicybindings entry. An update is
// checked as a create is, except for the reserved name suffix.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     admissionregistrationv1.SchemeGroupVersion,
		Resource:         "mutatingadmissionpolicybindings",
		Kind:             "MutatingAdmissionPolicyBinding",
		SingularName:     "mutatingadmissionpolicybinding",
		Categories:       []string{"api-extensions"},
		New:              func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
		Default:          setDefaults,
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		Validate:         validate,
		ValidateCreate:   validateCreate,
		Columns:          admissionregutil.BindingColumns,
		Row:              row,
	}
}

// setDefaults is upstream's: the defaults of the match resources, when set.
func setDefaults(obj runtime.Object) {
	admissionregutil.DefaultMatchResources(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.MatchResources)
}

// prepareForCreate starts the generation at 1, as upstream does for this
// resource although it has no status.
func prepareForCreate(obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Generation = 1
}

// prepareForUpdate moves the generation on when the spec changes.
func prepareForUpdate(obj, old runtime.Object) {
	b, oldB := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding), old.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	if !apiequality.Semantic.DeepEqual(b.Spec, oldB.Spec) {
		b.Generation = oldB.Generation + 1
	}
}

// validate checks the spec: the policy's name, the paramRef, and the match
// resources, which cannot match DELETE.
func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec
	p := field.NewPath("spec")
	errs := admissionregutil.ValidatePolicyName(spec.PolicyName, p.Child("policyName"))
	errs = append(errs, admissionregutil.ValidateParamRef(spec.ParamRef, p.Child("paramRef"))...)
	errs = append(errs, admissionregutil.ValidateMatchResources(spec.MatchResources, p.Child("matchResources"))...)
	return append(errs, admissionregutil.ValidateMutatingOperations(spec.MatchResources, p.Child("matchResources"))...)
}

func validateCreate(obj runtime.Object) field.ErrorList {
	return admissionregutil.ValidateStaticSuffix(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Name)
}

// row is upstream's: name, policy name, paramRef, age.
func row(obj runtime.Object, now time.Time) []interface{} {
	b := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	return []interface{}{b.Name, b.Spec.PolicyName, admissionregutil.ParamRefCell(b.Spec.ParamRef), registry.Age(b.CreationTimestamp, now)}
}
