package admissionregutil

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/ptr"
)

var (
	// admissionReviewVersions are the AdmissionReview versions a webhook
	// may ask for, as upstream's "must include at least one of" lists them.
	admissionReviewVersions = []string{"v1", "v1beta1"}
	noSideEffects           = []string{"None", "NoneOnDryRun"}
	anySideEffects          = []string{"None", "NoneOnDryRun", "Some", "Unknown"}
	reinvocationPolicies    = []string{"IfNeeded", "Never"}
)

// Webhook holds the fields of a validating or a mutating webhook that
// ValidateWebhooks checks; ReinvocationPolicy is nil for a validating one.
type Webhook struct {
	Name                    string
	ClientConfig            admissionregistrationv1.WebhookClientConfig
	Rules                   []admissionregistrationv1.RuleWithOperations
	FailurePolicy           *admissionregistrationv1.FailurePolicyType
	MatchPolicy             *admissionregistrationv1.MatchPolicyType
	NamespaceSelector       *metav1.LabelSelector
	ObjectSelector          *metav1.LabelSelector
	SideEffects             *admissionregistrationv1.SideEffectClass
	TimeoutSeconds          *int32
	AdmissionReviewVersions []string
	MatchConditions         []admissionregistrationv1.MatchCondition
	ReinvocationPolicy      *admissionregistrationv1.ReinvocationPolicyType
}

// WebhookOptions are the checks that an update relaxes where the stored
// configuration already broke them (it was written under older rules), as
// upstream does; NewWebhookOptions gives the strict ones of a create.
type WebhookOptions struct {
	requireNoSideEffects       bool
	requireKnownReviewVersion  bool
	requireUniqueNames         bool
	allowInvalidSelectorValues bool
	skipMatchConditions        bool
	storedExpressions          sets.Set[string]
}

// NewWebhookOptions returns the options of a create: every check applies.
func NewWebhookOptions() WebhookOptions {
	return WebhookOptions{requireNoSideEffects: true, requireKnownReviewVersion: true, requireUniqueNames: true}
}

// UpdateWebhookOptions returns the options of an update from old to
// updated: a check the stored webhooks already failed is not applied, match
// conditions are not checked when none changed, and expressions that were
// stored already compile in the environment of stored expressions.
func UpdateWebhookOptions(updated, old []Webhook) WebhookOptions {
	opts := WebhookOptions{
		requireNoSideEffects:      true,
		requireKnownReviewVersion: true,
		requireUniqueNames:        true,
		skipMatchConditions:       len(updated) == len(old),
		storedExpressions:         sets.New[string](),
	}
	names := sets.New[string]()
	for i, hook := range old {
		if hook.SideEffects == nil || !slices.Contains(noSideEffects, string(*hook.SideEffects)) {
			opts.requireNoSideEffects = false
		}
		if len(hook.AdmissionReviewVersions) > 0 && !slices.ContainsFunc(hook.AdmissionReviewVersions, isKnownReviewVersion) {
			opts.requireKnownReviewVersion = false
		}
		if names.Has(hook.Name) {
			opts.requireUniqueNames = false
		}
		names.Insert(hook.Name)
		if invalidSelectorValues(hook.NamespaceSelector) || invalidSelectorValues(hook.ObjectSelector) {
			opts.allowInvalidSelectorValues = true
		}
		if i < len(updated) && !slices.Equal(updated[i].MatchConditions, hook.MatchConditions) {
			opts.skipMatchConditions = false
		}
		for _, mc := range hook.MatchConditions {
			opts.storedExpressions.Insert(strings.TrimSpace(mc.Expression))
		}
	}
	return opts
}

func isKnownReviewVersion(v string) bool { return slices.Contains(admissionReviewVersions, v) }

func invalidSelectorValues(s *metav1.LabelSelector) bool {
	return s != nil && len(metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0
}

// ValidateWebhooks checks the webhooks of a configuration, found at path p
// ("webhooks"), with the given options.
func ValidateWebhooks(hooks []Webhook, opts WebhookOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range hooks {
		hook, hp := &hooks[i], p.Index(i)
		errs = append(errs, validateWebhook(hook, opts, hp)...)
		errs = append(errs, validateAdmissionReviewVersions(hook.AdmissionReviewVersions, opts.requireKnownReviewVersion, hp.Child("admissionReviewVersions"))...)
		if opts.requireUniqueNames && hook.Name != "" {
			if names.Has(hook.Name) {
				errs = append(errs, field.Duplicate(hp.Child("name"), hook.Name))
			}
			names.Insert(hook.Name)
		}
	}
	return errs
}

func validateWebhook(hook *Webhook, opts WebhookOptions, p *field.Path) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), hook.Name)
	for i := range hook.Rules {
		errs = append(errs, ValidateRuleWithOperations(&hook.Rules[i], p.Child("rules").Index(i))...)
	}
	errs = append(errs, ValidateFailurePolicy(hook.FailurePolicy, false, p.Child("failurePolicy"))...)
	errs = append(errs, validateMatchPolicy(hook.MatchPolicy, false, p.Child("matchPolicy"))...)
	sideEffects := anySideEffects
	if opts.requireNoSideEffects {
		sideEffects = noSideEffects
	}
	switch {
	case hook.SideEffects == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(sideEffects, ", ")))
	case !slices.Contains(sideEffects, string(*hook.SideEffects)):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *hook.SideEffects, sideEffects))
	}
	if t := hook.TimeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	selectorOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidSelectorValues}
	if hook.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(hook.NamespaceSelector, selectorOpts, p.Child("namespaceSelector"))...)
	}
	if hook.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(hook.ObjectSelector, selectorOpts, p.Child("objectSelector"))...)
	}
	if r := hook.ReinvocationPolicy; r != nil && !slices.Contains(reinvocationPolicies, string(*r)) {
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *r, reinvocationPolicies))
	}
	errs = append(errs, validateClientConfig(hook.ClientConfig, p.Child("clientConfig"))...)
	if !opts.skipMatchConditions {
		errs = append(errs, ValidateMatchConditions(hook.MatchConditions, false, opts.storedExpressions, p.Child("matchConditions"))...)
	}
	return errs
}

// validateClientConfig checks that exactly one of url (https, with a host,
// and no user, query or fragment) and service (name, namespace, a valid
// port and a path of DNS subdomain segments) is set.
func validateClientConfig(cc admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(p, "exactly one of url or service is required")}
	case cc.URL != nil:
		return webhook.ValidateWebhookURL(p.Child("url"), *cc.URL, true)
	default:
		s := cc.Service
		return webhook.ValidateWebhookService(p.Child("service"), s.Namespace, s.Name, s.Path, ptr.Deref(s.Port, 0))
	}
}

func validateAdmissionReviewVersions(versions []string, requireKnown bool, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of "+strings.Join(admissionReviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	known := false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		known = known || isKnownReviewVersion(v)
	}
	if requireKnown && !known {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(admissionReviewVersions, ", ")))
	}
	return errs
}
