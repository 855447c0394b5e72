package admissionregutil

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The values upstream accepts, sorted as its "supported values" lists are.
var (
	operations         = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	mutatingOperations = []string{"*", "CONNECT", "CREATE", "UPDATE"}
	scopes             = []string{"*", "Cluster", "Namespaced"}
	failurePolicies    = []string{"Fail", "Ignore"}
	matchPolicies      = []string{"Equivalent", "Exact"}
)

// ValidateRuleWithOperations checks the operations of a rule and the rule
// itself: groups, versions, resources (with their "*", "x/*" and "*/x"
// forms) and scope.
func ValidateRuleWithOperations(rule *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ops := p.Child("operations")
	if len(rule.Operations) == 0 {
		errs = append(errs, field.Required(ops, ""))
	}
	if len(rule.Operations) > 1 && slices.Contains(rule.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(ops, rule.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range rule.Operations {
		if !slices.Contains(operations, string(op)) {
			errs = append(errs, field.NotSupported(ops.Index(i), op, operations))
		}
	}
	return append(errs, validateRule(&rule.Rule, p)...)
}

func validateRule(rule *admissionregistrationv1.Rule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(rule.APIGroups) > 1 && slices.Contains(rule.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	// A group may be empty (the core group); a version may not.
	if len(rule.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(rule.APIVersions) > 1 && slices.Contains(rule.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), rule.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range rule.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(rule.Resources, p.Child("resources"))...)
	if rule.Scope != nil && !slices.Contains(scopes, string(*rule.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *rule.Scope, scopes))
	}
	return errs
}

// validateResources checks resources and subresources: "x/*" excludes any
// other "x/y", "*/y" any other "z/y", "*/*" anything else, and "*" any
// resource named without a subresource.
func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	allSubresourcesOf := sets.New[string]()  // x of "x/*"
	subresourceOfAll := sets.New[string]()   // y of "*/y"
	doubleWildcard, wildcard := false, false // "*/*", "*"
	// Upstream lets the last entry without a subresource decide whether a
	// resource is named beside "*" ("*", "pods" is rejected, "pods", "*"
	// is not); orch accepts what upstream accepts.
	lastNamesResource := false
	for i, r := range resources {
		if r == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		doubleWildcard = doubleWildcard || r == "*/*"
		wildcard = wildcard || r == "*"
		res, sub, hasSub := strings.Cut(r, "/")
		if !hasSub {
			lastNamesResource = r != "*"
			continue
		}
		if allSubresourcesOf.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, r)))
		}
		if subresourceOfAll.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, r)))
		}
		if sub == "*" {
			allSubresourcesOf.Insert(res)
		}
		if res == "*" {
			subresourceOfAll.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWildcard {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if wildcard && lastNamesResource {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// ValidateMatchResources checks a policy's match constraints or a binding's
// match resources (nil is valid: bindings may leave them out). Selectors
// are checked strictly, as for every type released after upstream fixed
// label value checks in selectors.
func ValidateMatchResources(mc *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if mc == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validateMatchPolicy(mc.MatchPolicy, true, p.Child("matchPolicy"))...)
	if mc.NamespaceSelector == nil {
		errs = append(errs, field.Required(p.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(mc.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if mc.ObjectSelector == nil {
		errs = append(errs, field.Required(p.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(mc.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	for i := range mc.ResourceRules {
		errs = append(errs, validateNamedRule(&mc.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range mc.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&mc.ExcludeResourceRules[i], p.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(rule *admissionregistrationv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, name := range rule.ResourceNames {
		np := p.Child("resourceNames").Index(i)
		for _, msg := range content.IsPathSegmentName(name) {
			errs = append(errs, field.Invalid(np, name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(np, name))
		}
		seen.Insert(name)
	}
	return append(errs, ValidateRuleWithOperations(&rule.RuleWithOperations, p)...)
}

// ValidateMutatingOperations reports the operations of match rules that a
// mutating policy cannot act on (DELETE): upstream reports them all on one
// path without an index.
func ValidateMutatingOperations(mc *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if mc == nil {
		return nil
	}
	var errs field.ErrorList
	for _, rule := range mc.ResourceRules {
		for _, op := range rule.Operations {
			if !slices.Contains(mutatingOperations, string(op)) {
				errs = append(errs, field.NotSupported(p.Child("resourceRules", "operations"), op, mutatingOperations))
			}
		}
	}
	return errs
}

// ValidateFailurePolicy checks a failurePolicy; required says whether nil
// is an error (policies) or not (webhooks, which are defaulted anyway).
func ValidateFailurePolicy(policy *admissionregistrationv1.FailurePolicyType, required bool, p *field.Path) field.ErrorList {
	switch {
	case policy == nil && required:
		return field.ErrorList{field.Required(p, "")}
	case policy != nil && !slices.Contains(failurePolicies, string(*policy)):
		return field.ErrorList{field.NotSupported(p, *policy, failurePolicies)}
	}
	return nil
}

func validateMatchPolicy(policy *admissionregistrationv1.MatchPolicyType, required bool, p *field.Path) field.ErrorList {
	switch {
	case policy == nil && required:
		return field.ErrorList{field.Required(p, "")}
	case policy != nil && !slices.Contains(matchPolicies, string(*policy)):
		return field.ErrorList{field.NotSupported(p, *policy, matchPolicies)}
	}
	return nil
}
