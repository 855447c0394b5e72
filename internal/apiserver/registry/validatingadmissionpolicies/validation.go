package validatingadmissionpolicies

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	"orch/internal/apiserver/registry/admissionregutil"
)

const (
	maxAuditAnnotations = 20
	// maxValueExpressionLength is upstream's limit on an audit annotation's
	// valueExpression, half of the 10 KiB its value may reach.
	maxValueExpressionLength = 5 * 1024
)

// reasons are the reasons a validation may give, sorted.
var reasons = []string{"Forbidden", "Invalid", "RequestEntityTooLarge"}

func validateCreate(obj runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	errs := validateSpec(p.Name, &p.Spec, admissionregutil.PolicyOptions{}, field.NewPath("spec"))
	return append(errs, admissionregutil.ValidateStaticSuffix(p.Name)...)
}

// validateUpdate checks an updated policy as a new one, except that match
// conditions are not checked again when neither they nor the paramKind
// changed, and expressions the stored policy had compile in the
// environment of stored expressions.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	p, oldP := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy), old.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	opts := admissionregutil.UpdatePolicyOptions(shared(&p.Spec), shared(&oldP.Spec), expressions(&oldP.Spec))
	return validateSpec(p.Name, &p.Spec, opts, field.NewPath("spec"))
}

func shared(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec) admissionregutil.Policy {
	return admissionregutil.Policy{
		FailurePolicy:    spec.FailurePolicy,
		ParamKind:        spec.ParamKind,
		MatchConstraints: spec.MatchConstraints,
		MatchConditions:  spec.MatchConditions,
	}
}

// expressions are every CEL expression of a spec.
func expressions(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec) sets.Set[string] {
	var list []string
	for _, c := range spec.MatchConditions {
		list = append(list, c.Expression)
	}
	for _, v := range spec.Variables {
		list = append(list, v.Expression)
	}
	for _, v := range spec.Validations {
		list = append(list, v.Expression, v.MessageExpression)
	}
	for _, a := range spec.AuditAnnotations {
		list = append(list, a.ValueExpression)
	}
	return admissionregutil.StoredExpressions(list...)
}

func validateSpec(name string, spec *admissionregistrationv1.ValidatingAdmissionPolicySpec, opts admissionregutil.PolicyOptions, p *field.Path) field.ErrorList {
	errs := admissionregutil.ValidatePolicy(shared(spec), opts, p)
	exprs, err := admissionregutil.NewExpressions(len(spec.Variables) > 0, spec.ParamKind != nil, opts.Stored)
	if err != nil {
		return append(errs, field.InternalError(p, err))
	}
	for i, v := range spec.Variables {
		errs = append(errs, exprs.Variable(v, p.Child("variables").Index(i))...)
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(p.Child("validations"), msg), field.Required(p.Child("auditAnnotations"), msg))
	}
	for i := range spec.Validations {
		errs = append(errs, validateValidation(exprs, &spec.Validations[i], p.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i := range spec.AuditAnnotations {
		a, ap := &spec.AuditAnnotations[i], p.Child("auditAnnotations").Index(i)
		errs = append(errs, validateAuditAnnotation(exprs, name, a, ap)...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

func validateValidation(exprs *admissionregutil.Expressions, v *admissionregistrationv1.Validation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, exprs.Compile(&admissionregutil.Validation{Expression: v.Expression}, true, false, p.Child("expression"))...)
	}
	if v.MessageExpression != "" {
		if strings.TrimSpace(v.MessageExpression) == "" {
			errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
		} else {
			// Untrimmed, so that compiler errors point at the right column.
			errs = append(errs, exprs.Compile(&admissionregutil.MessageExpression{Expression: v.MessageExpression}, false, false, p.Child("messageExpression"))...)
		}
	}
	switch msg := strings.TrimSpace(v.Message); {
	case v.Message != "" && msg == "":
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	case strings.ContainsAny(msg, "\n\r"):
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !slices.Contains(reasons, string(*v.Reason)) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, reasons))
	}
	return errs
}

// validateAuditAnnotation checks an audit annotation: POLICY/KEY must be a
// qualified name, and the value expression must compile to a string or null.
func validateAuditAnnotation(exprs *admissionregutil.Expressions, policyName string, a *admissionregistrationv1.AuditAnnotation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policyName == "" {
		errs = append(errs, field.Invalid(p.Child("key"), a.Key, "requires metadata.name be non-empty"))
	} else {
		key := policyName + "/" + a.Key
		for _, msg := range content.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(p.Child("key"), key, msg))
		}
	}
	vp := p.Child("valueExpression")
	switch expr := strings.TrimSpace(a.ValueExpression); {
	case expr == "":
		errs = append(errs, field.Required(vp, "valueExpression is not specified"))
	case len(expr) > maxValueExpressionLength:
		errs = append(errs, field.Required(vp, fmt.Sprintf("must not exceed %d bytes in length", maxValueExpressionLength)))
	default:
		errs = append(errs, exprs.Compile(&admissionregutil.AuditAnnotation{Expression: expr}, true, false, vp)...)
	}
	return errs
}

// validateStatusUpdate checks what a write through /status may change: the
// type checking warnings (each with a warning and a JSONPath field
// reference) and the conditions.
func validateStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	status := &obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status
	p := field.NewPath("status")
	var errs field.ErrorList
	if status.TypeChecking != nil {
		wp := p.Child("typeChecking", "expressionWarnings")
		for i, w := range status.TypeChecking.ExpressionWarnings {
			if w.Warning == "" {
				errs = append(errs, field.Required(wp.Index(i).Child("warning"), ""))
			}
			errs = append(errs, validateFieldRef(w.FieldRef, wp.Index(i).Child("fieldRef"))...)
		}
	}
	return append(errs, metav1validation.ValidateConditions(status.Conditions, p.Child("conditions"))...)
}

// validateFieldRef checks that a warning's field reference is a JSONPath.
func validateFieldRef(ref string, p *field.Path) field.ErrorList {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
		return field.ErrorList{field.Invalid(p, ref, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}
