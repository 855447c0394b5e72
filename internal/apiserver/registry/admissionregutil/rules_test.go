package admissionregutil

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// podRule is a valid rule: CREATE of core v1 pods.
func podRule() admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}
}

func TestValidateRuleWithOperations(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*admissionregistrationv1.RuleWithOperations)
		want   []want
	}{
		{"valid", func(*admissionregistrationv1.RuleWithOperations) {}, nil},
		{"everything", func(r *admissionregistrationv1.RuleWithOperations) {
			r.Operations = []admissionregistrationv1.OperationType{"*"}
			r.APIGroups, r.APIVersions, r.Resources = []string{"*"}, []string{"*"}, []string{"*/*"}
			r.Scope = ptr.To(admissionregistrationv1.NamespacedScope)
		}, nil},
		{"resources with and without subresources", func(r *admissionregistrationv1.RuleWithOperations) {
			r.Resources = []string{"pods", "pods/status", "deployments/*", "*/scale"}
		}, nil},
		{"every resource and every status", func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*", "*/status"} }, nil},
		// Upstream lets the last entry without a subresource decide.
		{"a resource before *", func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"pods", "*"} }, nil},
		{"no operations", func(r *admissionregistrationv1.RuleWithOperations) { r.Operations = nil }, []want{
			{"FieldValueRequired rules[0].operations", ""},
		}},
		{"* and another operation", func(r *admissionregistrationv1.RuleWithOperations) {
			r.Operations = []admissionregistrationv1.OperationType{"*", "CREATE"}
		}, []want{{"FieldValueInvalid rules[0].operations", "if '*' is present, must not specify other operations"}}},
		{"unknown operation", func(r *admissionregistrationv1.RuleWithOperations) {
			r.Operations = []admissionregistrationv1.OperationType{"PATCH"}
		}, []want{{"FieldValueNotSupported rules[0].operations[0]", `supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`}}},
		{"no groups, versions or resources", func(r *admissionregistrationv1.RuleWithOperations) {
			r.APIGroups, r.APIVersions, r.Resources = nil, nil, nil
		}, []want{
			{"FieldValueRequired rules[0].apiGroups", ""},
			{"FieldValueRequired rules[0].apiVersions", ""},
			{"FieldValueRequired rules[0].resources", ""},
		}},
		{"* and another group and version", func(r *admissionregistrationv1.RuleWithOperations) {
			r.APIGroups, r.APIVersions = []string{"*", "apps"}, []string{"v1", "*"}
		}, []want{
			{"FieldValueInvalid rules[0].apiGroups", "if '*' is present, must not specify other API groups"},
			{"FieldValueInvalid rules[0].apiVersions", "if '*' is present, must not specify other API versions"},
		}},
		{"empty version and resource", func(r *admissionregistrationv1.RuleWithOperations) {
			r.APIVersions, r.Resources = []string{"v1", ""}, []string{""}
		}, []want{
			{"FieldValueRequired rules[0].apiVersions[1]", ""},
			{"FieldValueRequired rules[0].resources[0]", ""},
		}},
		{"x/* and x/y", func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"pods/*", "pods/status"} }, []want{
			{"FieldValueInvalid rules[0].resources[1]", "if 'pods/*' is present, must not specify pods/status"},
		}},
		{"*/y and x/y", func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*/status", "pods/status"} }, []want{
			{"FieldValueInvalid rules[0].resources[1]", "if '*/status' is present, must not specify pods/status"},
		}},
		{"*/* and more", func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*/*", "pods"} }, []want{
			{"FieldValueInvalid rules[0].resources", "if '*/*' is present, must not specify other resources"},
		}},
		{"* and a resource", func(r *admissionregistrationv1.RuleWithOperations) { r.Resources = []string{"*", "pods"} }, []want{
			{"FieldValueInvalid rules[0].resources", "if '*' is present, must not specify other resources without subresources"},
		}},
		{"unknown scope", func(r *admissionregistrationv1.RuleWithOperations) {
			r.Scope = ptr.To(admissionregistrationv1.ScopeType("Global"))
		}, []want{
			{"FieldValueNotSupported rules[0].scope", `supported values: "*", "Cluster", "Namespaced"`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := podRule()
			tt.modify(&rule)
			registrytest.ExpectWant(t, ValidateRuleWithOperations(&rule, field.NewPath("rules").Index(0)), tt.want...)
		})
	}
}

func TestDefaultMatchResources(t *testing.T) {
	DefaultMatchResources(nil) // stays nil, no panic
	mc := &admissionregistrationv1.MatchResources{
		ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule()}},
		ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule()}},
	}
	DefaultMatchResources(mc)
	all := ptr.To(admissionregistrationv1.AllScopes)
	want := &admissionregistrationv1.MatchResources{
		MatchPolicy:          ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:    &metav1.LabelSelector{},
		ObjectSelector:       &metav1.LabelSelector{},
		ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule()}},
		ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule()}},
	}
	want.ResourceRules[0].Scope, want.ExcludeResourceRules[0].Scope = all, all
	if !reflect.DeepEqual(mc, want) {
		t.Errorf("defaulted = %+v, want %+v", mc, want)
	}

	set := &admissionregistrationv1.MatchResources{
		MatchPolicy:       ptr.To(admissionregistrationv1.Exact),
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
	}
	DefaultMatchResources(set)
	if *set.MatchPolicy != admissionregistrationv1.Exact || set.NamespaceSelector.MatchLabels["a"] != "b" {
		t.Errorf("values set were changed: %+v", set)
	}
}

func TestValidateMatchResources(t *testing.T) {
	valid := func() *admissionregistrationv1.MatchResources {
		mc := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule()}}}
		DefaultMatchResources(mc)
		return mc
	}
	tests := []struct {
		name   string
		modify func(*admissionregistrationv1.MatchResources)
		want   []want
	}{
		{"valid", func(*admissionregistrationv1.MatchResources) {}, nil},
		{"resource names", func(mc *admissionregistrationv1.MatchResources) {
			mc.ResourceRules[0].ResourceNames = []string{"a", "b"}
		}, nil},
		{"not defaulted", func(mc *admissionregistrationv1.MatchResources) {
			mc.MatchPolicy, mc.NamespaceSelector, mc.ObjectSelector = nil, nil, nil
		}, []want{
			{"FieldValueRequired spec.matchResources.matchPolicy", ""},
			{"FieldValueRequired spec.matchResources.namespaceSelector", ""},
			{"FieldValueRequired spec.matchResources.objectSelector", ""},
		}},
		{"unknown match policy", func(mc *admissionregistrationv1.MatchResources) {
			mc.MatchPolicy = ptr.To(admissionregistrationv1.MatchPolicyType("Close"))
		}, []want{{"FieldValueNotSupported spec.matchResources.matchPolicy", `supported values: "Equivalent", "Exact"`}}},
		{"invalid label value, strictly", func(mc *admissionregistrationv1.MatchResources) {
			mc.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpIn, Values: []string{"-bad-"}}}}
		}, []want{{"FieldValueInvalid spec.matchResources.objectSelector.matchExpressions[0].values[0]", "a valid label must be"}}},
		{"bad and repeated resource names", func(mc *admissionregistrationv1.MatchResources) {
			mc.ResourceRules[0].ResourceNames = []string{"a/b", "c", "c"}
		}, []want{
			{"FieldValueInvalid spec.matchResources.resourceRules[0].resourceNames[0]", "may not contain '/'"},
			{"FieldValueDuplicate spec.matchResources.resourceRules[0].resourceNames[2]", ""},
		}},
		{"bad exclude rule", func(mc *admissionregistrationv1.MatchResources) {
			mc.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{"*"},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}},
			}}}
		}, []want{{"FieldValueRequired spec.matchResources.excludeResourceRules[0].resources", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := valid()
			tt.modify(mc)
			registrytest.ExpectWant(t, ValidateMatchResources(mc, field.NewPath("spec", "matchResources")), tt.want...)
		})
	}
	registrytest.ExpectWant(t, ValidateMatchResources(nil, field.NewPath("spec", "matchResources")))
}

func TestValidateMutatingOperations(t *testing.T) {
	mc := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule()}}}
	mc.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"CREATE", "DELETE", "UPDATE", "CONNECT"}
	registrytest.ExpectWant(t, ValidateMutatingOperations(mc, field.NewPath("spec", "matchConstraints")),
		want{"FieldValueNotSupported spec.matchConstraints.resourceRules.operations", `supported values: "*", "CONNECT", "CREATE", "UPDATE"`})
	registrytest.ExpectWant(t, ValidateMutatingOperations(nil, field.NewPath("spec")))
}

func TestValidateFailurePolicy(t *testing.T) {
	p := field.NewPath("spec", "failurePolicy")
	registrytest.ExpectWant(t, ValidateFailurePolicy(nil, false, p))
	registrytest.ExpectWant(t, ValidateFailurePolicy(nil, true, p), want{"FieldValueRequired spec.failurePolicy", ""})
	registrytest.ExpectWant(t, ValidateFailurePolicy(ptr.To(admissionregistrationv1.Ignore), true, p))
	registrytest.ExpectWant(t, ValidateFailurePolicy(ptr.To(admissionregistrationv1.FailurePolicyType("Retry")), false, p),
		want{"FieldValueNotSupported spec.failurePolicy", `supported values: "Fail", "Ignore"`})
}
