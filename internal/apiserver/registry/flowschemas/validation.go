package flowschemas

import (
	"fmt"
	"slices"
	"strings"

	"orch/internal/apiserver/registry"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// The values upstream accepts, sorted as its messages list them.
var (
	distinguisherMethods = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	subjectKinds         = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	verbs                = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
)

// mandatory are the specs the mandatory schemas must have, by name.
var mandatory = func() map[string]*flowcontrolv1.FlowSchemaSpec {
	m := map[string]*flowcontrolv1.FlowSchemaSpec{}
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		m[fs.Name] = &fs.Spec
	}
	return m
}()

const nsErrIntro = "each member of this list must be '*' or a DNS-1123 label; "

// validate is upstream's validation of a flow schema, on create and on
// update (ObjectMeta is the handlers'): the spec, that a mandatory schema
// ("exempt", "catch-all") has exactly its bootstrap spec, and the status.
func validate(obj runtime.Object) field.ErrorList {
	fs := obj.(*flowcontrolv1.FlowSchema)
	p := field.NewPath("spec")
	errs := validateSpec(fs.Name, &fs.Spec, p)
	if want, ok := mandatory[fs.Name]; ok && !equality.Semantic.DeepEqual(&fs.Spec, want) {
		errs = append(errs, field.Invalid(p, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateStatus(&fs.Status)...)
}

// validateStatusUpdate checks what a write through /status may change.
func validateStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	return validateStatus(&obj.(*flowcontrolv1.FlowSchema).Status)
}

func validateSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mp := p.Child("matchingPrecedence")
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > flowcontrolv1.FlowSchemaMaxMatchingPrecedence {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !slices.Contains(distinguisherMethods, string(dm.Type)) {
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod", "type"), dm, distinguisherMethods))
	}
	plp := p.Child("priorityLevelConfiguration", "name")
	if pl := spec.PriorityLevelConfiguration.Name; pl == "" {
		errs = append(errs, field.Required(plp, "must reference a priority level"))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(pl, false) {
			errs = append(errs, field.Invalid(plp, pl, msg))
		}
	}
	for i := range spec.Rules {
		errs = append(errs, validateRules(&spec.Rules[i], p.Child("rules").Index(i))...)
	}
	return errs
}

func validateRules(rule *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], p.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

// validateSubject checks the member the kind names and forbids the others.
func validateSubject(s *flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = validateServiceAccount(s.ServiceAccount, p.Child("serviceAccount"))
	case flowcontrolv1.SubjectKindUser:
		errs = validateNamed(s.User != nil, s.User != nil && s.User.Name != "", p.Child("user"), "user is required when subject kind is 'User'")
	case flowcontrolv1.SubjectKindGroup:
		errs = validateNamed(s.Group != nil, s.Group != nil && s.Group.Name != "", p.Child("group"), "group is required when subject kind is 'Group'")
	default:
		return field.ErrorList{field.NotSupported(p.Child("kind"), s.Kind, subjectKinds)}
	}
	if s.Kind != flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil {
		errs = append(errs, field.Forbidden(p.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
	}
	if s.Kind != flowcontrolv1.SubjectKindUser && s.User != nil {
		errs = append(errs, field.Forbidden(p.Child("user"), "user is forbidden when subject kind is not 'User'"))
	}
	if s.Kind != flowcontrolv1.SubjectKindGroup && s.Group != nil {
		errs = append(errs, field.Forbidden(p.Child("group"), "group is forbidden when subject kind is not 'Group'"))
	}
	return errs
}

// validateNamed checks a user or group subject: present, with a name.
func validateNamed(present, named bool, p *field.Path, missing string) field.ErrorList {
	switch {
	case !present:
		return field.ErrorList{field.Required(p, missing)}
	case !named:
		return field.ErrorList{field.Required(p.Child("name"), "")}
	}
	return nil
}

// validateServiceAccount checks a service account subject: a name ("*" for
// all) and a namespace.
func validateServiceAccount(sa *flowcontrolv1.ServiceAccountSubject, p *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(p, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	if sa.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if sa.Name != flowcontrolv1.NameAll {
		for _, msg := range apimachineryvalidation.ValidateServiceAccountName(sa.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), sa.Name, msg))
		}
	}
	if sa.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(sa.Namespace, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), sa.Namespace, msg))
		}
	}
	return errs
}

func validateResourceRule(rule *flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, p.Child("verbs"))
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(rule.APIGroups) > 1 && slices.Contains(rule.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(rule.Resources) > 1 && slices.Contains(rule.Resources, "*") {
		errs = append(errs, field.Invalid(p.Child("resources"), rule.Resources, "if '*' is present, must not specify other resources"))
	}
	np := p.Child("namespaces")
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		errs = append(errs, field.Required(np, "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(rule.Namespaces, "*"):
		if len(rule.Namespaces) > 1 {
			errs = append(errs, field.Invalid(np, rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(np.Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return errs
}

func validateNonResourceRule(rule *flowcontrolv1.NonResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, p.Child("verbs"))
	up := p.Child("nonResourceURLs")
	switch {
	case len(rule.NonResourceURLs) == 0:
		errs = append(errs, field.Required(up, "nonResourceURLs must contain at least one value"))
	case slices.Contains(rule.NonResourceURLs, "*"):
		if len(rule.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(up, rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, url := range rule.NonResourceURLs {
			if msg := checkURLPath(url); msg != "" {
				errs = append(errs, field.Invalid(up.Index(i), url, msg))
			}
		}
	}
	return errs
}

// validateVerbs wants at least one verb, "*" alone, or only verbs upstream knows.
func validateVerbs(vs []string, p *field.Path) field.ErrorList {
	switch {
	case len(vs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case slices.Contains(vs, "*"):
		if len(vs) > 1 {
			return field.ErrorList{field.Invalid(p, vs, "if '*' is present, must not specify other verbs")}
		}
	default:
		for _, v := range vs {
			if !slices.Contains(verbs, v) {
				return field.ErrorList{field.NotSupported(p, vs, verbs)}
			}
		}
	}
	return nil
}

// checkURLPath says what is wrong with a non-resource URL, or "": it starts
// with a slash, has no white space and no double slash, and a wildcard only
// as a final "/*".
func checkURLPath(path string) string {
	switch {
	case path == "":
		return "must not be empty"
	case path == "/":
		return ""
	case !strings.HasPrefix(path, "/"):
		return "must start with slash"
	case strings.Contains(path, " "):
		return "must not contain white-space"
	case strings.Contains(path, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(path, "*"); n > 1 || n == 1 && !strings.HasSuffix(path, "/*") {
		return "wildcard can only do suffix matching"
	}
	return ""
}

// validateStatus wants each condition with a type, and no type twice.
func validateStatus(status *flowcontrolv1.FlowSchemaStatus) field.ErrorList {
	return registry.ValidateConditionTypes(field.NewPath("status", "conditions"), status.Conditions,
		func(c flowcontrolv1.FlowSchemaCondition) flowcontrolv1.FlowSchemaConditionType { return c.Type })
}
