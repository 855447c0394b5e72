// Package validatingadmissionpolicybindings is the registry entry for
// admissionregistration.k8s.io/v1 validatingadmissionpolicybindings, with
// upstream's defaults, validation and table.
package validatingadmissionpolicybindings

import (
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/admissionregutil"
)

// actions are the validation actions a binding may take, sorted.
var actions = []string{"Audit", "Deny", "Warn"}

// Resource returns the validatingadmissionpolicybindings entry. An update
// is checked as a create is, except for the reserved name suffix.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     admissionregistrationv1.SchemeGroupVersion,
		Resource:         "validatingadmissionpolicybindings",
		Kind:             "ValidatingAdmissionPolicyBinding",
		SingularName:     "validatingadmissionpolicybinding",
		Categories:       []string{"api-extensions"},
		New:              func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
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
	admissionregutil.DefaultMatchResources(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources)
}

// prepareForCreate starts the generation at 1, as upstream does for this
// resource although it has no status.
func prepareForCreate(obj runtime.Object) {
	obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Generation = 1
}

// prepareForUpdate moves the generation on when the spec changes.
func prepareForUpdate(obj, old runtime.Object) {
	b, oldB := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding), old.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	if !apiequality.Semantic.DeepEqual(b.Spec, oldB.Spec) {
		b.Generation = oldB.Generation + 1
	}
}

// validate checks the spec: the policy's name, the paramRef, the match
// resources and the validation actions.
func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec
	p := field.NewPath("spec")
	errs := admissionregutil.ValidatePolicyName(spec.PolicyName, p.Child("policyName"))
	errs = append(errs, admissionregutil.ValidateParamRef(spec.ParamRef, p.Child("paramRef"))...)
	errs = append(errs, admissionregutil.ValidateMatchResources(spec.MatchResources, p.Child("matchResources"))...)
	return append(errs, validateActions(spec.ValidationActions, p.Child("validationActions"))...)
}

func validateCreate(obj runtime.Object) field.ErrorList {
	return admissionregutil.ValidateStaticSuffix(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Name)
}

// validateActions checks that there is at least one action, each known and
// once, and not both Deny and Warn.
func validateActions(list []admissionregistrationv1.ValidationAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range list {
		if !slices.Contains(actions, string(a)) {
			errs = append(errs, field.NotSupported(p.Index(i), a, actions))
		}
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.HasAll(admissionregistrationv1.Deny, admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(p, list, fmt.Sprintf("must not contain both %s and %s (repeating the same validation failure information in the API response and headers serves no purpose)", admissionregistrationv1.Deny, admissionregistrationv1.Warn)))
	}
	if len(list) == 0 {
		errs = append(errs, field.Required(p, "at least one validation action is required"))
	}
	return errs
}

// row is upstream's: name, policy name, paramRef, age.
func row(obj runtime.Object, now time.Time) []interface{} {
	b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	return []interface{}{b.Name, b.Spec.PolicyName, admissionregutil.ParamRefCell(b.Spec.ParamRef), registry.Age(b.CreationTimestamp, now)}
}
