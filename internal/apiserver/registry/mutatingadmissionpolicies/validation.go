package mutatingadmissionpolicies

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"

	"orch/internal/apiserver/registry/admissionregutil"
)

var (
	// patchTypes are the kinds of mutation, sorted.
	patchTypes           = []string{"ApplyConfiguration", "JSONPatch"}
	reinvocationPolicies = []string{"IfNeeded", "Never"}
)

func validateCreate(obj runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
	errs := validateSpec(&p.Spec, admissionregutil.PolicyOptions{}, field.NewPath("spec"))
	return append(errs, admissionregutil.ValidateStaticSuffix(p.Name)...)
}

// validateUpdate checks an updated policy as a new one, except that match
// conditions are not checked again when neither they nor the paramKind
// changed, and expressions the stored policy had compile in the
// environment of stored expressions.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	p, oldP := obj.(*admissionregistrationv1.MutatingAdmissionPolicy), old.(*admissionregistrationv1.MutatingAdmissionPolicy)
	opts := admissionregutil.UpdatePolicyOptions(shared(&p.Spec), shared(&oldP.Spec), expressions(&oldP.Spec))
	return validateSpec(&p.Spec, opts, field.NewPath("spec"))
}

func shared(spec *admissionregistrationv1.MutatingAdmissionPolicySpec) admissionregutil.Policy {
	return admissionregutil.Policy{
		FailurePolicy:    spec.FailurePolicy,
		ParamKind:        spec.ParamKind,
		MatchConstraints: spec.MatchConstraints,
		MatchConditions:  spec.MatchConditions,
		Mutating:         true,
	}
}

// expressions are every CEL expression of a spec.
func expressions(spec *admissionregistrationv1.MutatingAdmissionPolicySpec) sets.Set[string] {
	var list []string
	for _, c := range spec.MatchConditions {
		list = append(list, c.Expression)
	}
	for _, v := range spec.Variables {
		list = append(list, v.Expression)
	}
	for _, m := range spec.Mutations {
		if m.ApplyConfiguration != nil {
			list = append(list, m.ApplyConfiguration.Expression)
		}
		if m.JSONPatch != nil {
			list = append(list, m.JSONPatch.Expression)
		}
	}
	return admissionregutil.StoredExpressions(list...)
}

func validateSpec(spec *admissionregistrationv1.MutatingAdmissionPolicySpec, opts admissionregutil.PolicyOptions, p *field.Path) field.ErrorList {
	errs := admissionregutil.ValidatePolicy(shared(spec), opts, p)
	exprs, err := admissionregutil.NewExpressions(true, spec.ParamKind != nil, opts.Stored)
	if err != nil {
		return append(errs, field.InternalError(p, err))
	}
	for i, v := range spec.Variables {
		errs = append(errs, exprs.Variable(v, p.Child("variables").Index(i))...)
	}
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range spec.Mutations {
		errs = append(errs, validateMutation(exprs, &spec.Mutations[i], p.Child("mutations").Index(i))...)
	}
	switch r := spec.ReinvocationPolicy; {
	case r == "":
		errs = append(errs, field.Required(p.Child("reinvocationPolicy"), ""))
	case !slices.Contains(reinvocationPolicies, string(r)):
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), r, reinvocationPolicies))
	}
	return errs
}

// validateMutation checks that a mutation has the one patch its patchType
// names, with an expression that compiles to that kind of patch.
func validateMutation(exprs *admissionregutil.Expressions, m *admissionregistrationv1.Mutation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch m.PatchType {
	case "":
		errs = append(errs, field.Required(p.Child("patchType"), ""))
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(p.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else {
			errs = append(errs, compilePatch(exprs, m.JSONPatch.Expression, func(e string) plugincel.ExpressionAccessor {
				return &patch.JSONPatchCondition{Expression: e}
			}, p.Child("jsonPatch", "expression"))...)
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(p.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(p.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else {
			errs = append(errs, compilePatch(exprs, m.ApplyConfiguration.Expression, func(e string) plugincel.ExpressionAccessor {
				return &patch.ApplyConfigurationCondition{Expression: e}
			}, p.Child("applyConfiguration", "expression"))...)
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(p.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("patchType"), m.PatchType, patchTypes))
	}
	return errs
}

// compilePatch compiles a patch expression, with the patch types in scope.
func compilePatch(exprs *admissionregutil.Expressions, expr string, accessor func(string) plugincel.ExpressionAccessor, p *field.Path) field.ErrorList {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return exprs.Compile(accessor(expr), true, true, p)
}
