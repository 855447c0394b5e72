package admissionregutil

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// staticSuffix ends the names upstream keeps for the admission
// configurations it loads from manifests at start; the API refuses to
// create objects with such names (ManifestBasedAdmissionControlConfig, on
// by default in 1.37).
const staticSuffix = ".static.k8s.io"

// ValidateStaticSuffix refuses, on create, a name that ends in
// ".static.k8s.io".
func ValidateStaticSuffix(name string) field.ErrorList {
	if !strings.HasSuffix(name, staticSuffix) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name,
		fmt.Sprintf("names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", staticSuffix))}
}

// Policy is what a validating and a mutating admission policy's specs
// share, the part validated here.
type Policy struct {
	FailurePolicy    *admissionregistrationv1.FailurePolicyType
	ParamKind        *admissionregistrationv1.ParamKind
	MatchConstraints *admissionregistrationv1.MatchResources
	MatchConditions  []admissionregistrationv1.MatchCondition
	// Mutating policies cannot match DELETE.
	Mutating bool
}

// PolicyOptions are how an update relaxes the checks of a policy;
// the zero value is a create's.
type PolicyOptions struct {
	skipMatchConditions bool
	// Stored are the expressions of the stored policy (StoredExpressions),
	// which compile in the environment of stored expressions.
	Stored sets.Set[string]
}

// UpdatePolicyOptions returns the options of an update from old to
// updated, given the expressions old has: match conditions are not checked
// again when neither they nor the paramKind changed.
func UpdatePolicyOptions(updated, old Policy, oldExpressions sets.Set[string]) PolicyOptions {
	return PolicyOptions{
		skipMatchConditions: apiequality.Semantic.DeepEqual(updated.ParamKind, old.ParamKind) &&
			apiequality.Semantic.DeepEqual(updated.MatchConditions, old.MatchConditions),
		Stored: oldExpressions,
	}
}

// ValidatePolicy checks the shared part of a policy spec at p ("spec"):
// failurePolicy, paramKind, matchConstraints (required, with at least one
// resource rule, which gives the expressions their types) and match
// conditions.
func ValidatePolicy(spec Policy, opts PolicyOptions, p *field.Path) field.ErrorList {
	errs := ValidateFailurePolicy(spec.FailurePolicy, true, p.Child("failurePolicy"))
	if spec.ParamKind != nil {
		errs = append(errs, validateParamKind(*spec.ParamKind, p.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	} else {
		mp := p.Child("matchConstraints")
		errs = append(errs, ValidateMatchResources(spec.MatchConstraints, mp)...)
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(mp.Child("resourceRules"), ""))
		}
		if spec.Mutating {
			errs = append(errs, ValidateMutatingOperations(spec.MatchConstraints, mp)...)
		}
	}
	if !opts.skipMatchConditions {
		errs = append(errs, ValidateMatchConditions(spec.MatchConditions, spec.ParamKind != nil, opts.Stored, p.Child("matchConditions"))...)
	}
	return errs
}

// validateParamKind checks a paramKind as upstream checks an APIService's
// group and version, and that the kind is a DNS-1035 label in any case.
func validateParamKind(pk admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	vp := p.Child("apiVersion")
	switch group, version, err := parseGroupVersion(pk.APIVersion); {
	case pk.APIVersion == "":
		errs = append(errs, field.Required(vp, ""))
	case err != nil:
		errs = append(errs, field.Invalid(vp, pk.APIVersion, err.Error()))
	default:
		if group != "" {
			if msgs := utilvalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(vp, group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(vp, pk.APIVersion, "version must be specified"))
		} else if msgs := utilvalidation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp, version, strings.Join(msgs, ",")))
		}
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// parseGroupVersion splits "group/version" or "version"; "/" is empty.
func parseGroupVersion(gv string) (group, version string, err error) {
	if gv == "" || gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		group, version, _ = strings.Cut(gv, "/")
		return group, version, nil
	default:
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

// ValidatePolicyName checks a binding's policyName: required, a DNS subdomain.
func ValidatePolicyName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// ValidateParamRef checks a binding's paramRef (nil is valid): exactly one
// of a name (a path segment) and a selector, and parameterNotFoundAction
// Allow or Deny.
func ValidateParamRef(pr *admissionregistrationv1.ParamRef, p *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	const exclusive = `name and selector are mutually exclusive`
	var errs field.ErrorList
	if pr.Name != "" {
		for _, msg := range content.IsPathSegmentName(pr.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			errs = append(errs, field.Forbidden(p.Child("name"), exclusive))
		}
	}
	if pr.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if pr.Name != "" {
			errs = append(errs, field.Forbidden(p.Child("selector"), exclusive))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		errs = append(errs, field.Required(p, `one of name or selector must be specified`))
	}
	actions := []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}
	switch a := pr.ParameterNotFoundAction; {
	case a == nil || *a == "":
		errs = append(errs, field.Required(p.Child("parameterNotFoundAction"), ""))
	case *a != admissionregistrationv1.DenyAction && *a != admissionregistrationv1.AllowAction:
		errs = append(errs, field.NotSupported(p.Child("parameterNotFoundAction"), *a, actions))
	}
	return errs
}
