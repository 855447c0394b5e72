package admissionregutil

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DefaultRules sets upstream's default scope ("*") on rules that have none.
func DefaultRules(rules []admissionregistrationv1.RuleWithOperations) {
	for i := range rules {
		defaultScope(&rules[i].Rule)
	}
}

func defaultScope(rule *admissionregistrationv1.Rule) {
	if rule.Scope == nil {
		scope := admissionregistrationv1.AllScopes
		rule.Scope = &scope
	}
}

// DefaultMatchResources sets upstream's defaults of a policy's match
// constraints or a binding's match resources: matchPolicy Equivalent, empty
// selectors, and the scope of every rule. A nil mc stays nil.
func DefaultMatchResources(mc *admissionregistrationv1.MatchResources) {
	if mc == nil {
		return
	}
	DefaultMatchPolicy(&mc.MatchPolicy)
	DefaultSelector(&mc.NamespaceSelector)
	DefaultSelector(&mc.ObjectSelector)
	for i := range mc.ResourceRules {
		defaultScope(&mc.ResourceRules[i].Rule)
	}
	for i := range mc.ExcludeResourceRules {
		defaultScope(&mc.ExcludeResourceRules[i].Rule)
	}
}

// DefaultSelector sets *s to the empty selector (everything) when it is nil.
func DefaultSelector(s **metav1.LabelSelector) {
	if *s == nil {
		*s = &metav1.LabelSelector{}
	}
}

// DefaultMatchPolicy sets *p to Equivalent when it is nil.
func DefaultMatchPolicy(p **admissionregistrationv1.MatchPolicyType) {
	if *p == nil {
		equivalent := admissionregistrationv1.Equivalent
		*p = &equivalent
	}
}

// DefaultFailurePolicy sets *p to Fail when it is nil.
func DefaultFailurePolicy(p **admissionregistrationv1.FailurePolicyType) {
	if *p == nil {
		fail := admissionregistrationv1.Fail
		*p = &fail
	}
}

// DefaultClientConfig sets a service's port to 443 when it has none.
func DefaultClientConfig(cc *admissionregistrationv1.WebhookClientConfig) {
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To[int32](443)
	}
}
