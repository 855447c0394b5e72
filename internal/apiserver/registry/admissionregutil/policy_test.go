package admissionregutil

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

// policy is a valid, defaulted policy on pods.
func policy() Policy {
	mc := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podRule()}}}
	DefaultMatchResources(mc)
	return Policy{FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: mc}
}

func TestValidatePolicy(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Policy)
		want   []want
	}{
		{"valid", func(*Policy) {}, nil},
		{"paramKind and match conditions on params", func(p *Policy) {
			p.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "ReplicaLimit"}
			p.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "enabled", Expression: "params.enabled == true"}}
		}, nil},
		{"core paramKind", func(p *Policy) { p.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"} }, nil},
		{"nothing", func(p *Policy) { *p = Policy{} }, []want{
			{"FieldValueRequired spec.failurePolicy", ""},
			{"FieldValueRequired spec.matchConstraints", ""},
		}},
		{"no resource rules", func(p *Policy) { p.MatchConstraints.ResourceRules = nil }, []want{
			{"FieldValueRequired spec.matchConstraints.resourceRules", ""},
		}},
		{"DELETE, validating", func(p *Policy) {
			p.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"DELETE"}
		}, nil},
		{"DELETE, mutating", func(p *Policy) {
			p.Mutating = true
			p.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"DELETE"}
		}, []want{{"FieldValueNotSupported spec.matchConstraints.resourceRules.operations", `supported values: "*", "CONNECT", "CREATE", "UPDATE"`}}},
		{"params without paramKind", func(p *Policy) {
			p.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "enabled", Expression: "params.enabled == true"}}
		}, []want{{"FieldValueInvalid spec.matchConditions[0].expression", "undeclared reference to 'params'"}}},
		{"paramKind without anything", func(p *Policy) { p.ParamKind = &admissionregistrationv1.ParamKind{} }, []want{
			{"FieldValueRequired spec.paramKind.apiVersion", ""},
			{"FieldValueRequired spec.paramKind.kind", ""},
		}},
		{"paramKind with two slashes", func(p *Policy) { p.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/v1", Kind: "X"} }, []want{
			{"FieldValueInvalid spec.paramKind.apiVersion", "unexpected GroupVersion string: a/b/v1"},
		}},
		{"paramKind group and kind", func(p *Policy) {
			p.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "Example.com/v1", Kind: "Replica_Limit"}
		}, []want{
			{"FieldValueInvalid spec.paramKind.apiVersion", "a lowercase RFC 1123 subdomain"},
			{"FieldValueInvalid spec.paramKind.kind", "may have mixed case, but should otherwise match: a DNS-1035 label"},
		}},
		{"paramKind without version", func(p *Policy) {
			p.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/", Kind: "X"}
		}, []want{
			{"FieldValueInvalid spec.paramKind.apiVersion", "version must be specified"},
		}},
		{"paramKind version", func(p *Policy) {
			p.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/V1", Kind: "X"}
		}, []want{
			{"FieldValueInvalid spec.paramKind.apiVersion", "a DNS-1035 label"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy()
			tt.modify(&p)
			registrytest.ExpectWant(t, ValidatePolicy(p, PolicyOptions{}, field.NewPath("spec")), tt.want...)
		})
	}
}

func TestUpdatePolicyOptions(t *testing.T) {
	broken := []admissionregistrationv1.MatchCondition{{Name: "old", Expression: "no such thing"}}
	old := policy()
	old.MatchConditions = broken
	p := field.NewPath("spec")

	same := policy()
	same.MatchConditions = broken
	same.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	registrytest.ExpectWant(t, ValidatePolicy(same, UpdatePolicyOptions(same, old, nil), p))

	withParams := same
	withParams.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	registrytest.ExpectWant(t, ValidatePolicy(withParams, UpdatePolicyOptions(withParams, old, nil), p),
		want{"FieldValueInvalid spec.matchConditions[0].expression", "compilation failed"})
}

func TestValidatePolicyName(t *testing.T) {
	p := field.NewPath("spec", "policyName")
	registrytest.ExpectWant(t, ValidatePolicyName("replica-limit.example.com", p))
	registrytest.ExpectWant(t, ValidatePolicyName("", p), want{"FieldValueRequired spec.policyName", ""})
	registrytest.ExpectWant(t, ValidatePolicyName("Replica_Limit", p), want{"FieldValueInvalid spec.policyName", "a lowercase RFC 1123 subdomain"})
}

func TestValidateParamRef(t *testing.T) {
	deny := ptr.To(admissionregistrationv1.DenyAction)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	tests := []struct {
		name string
		ref  *admissionregistrationv1.ParamRef
		want []want
	}{
		{"none", nil, nil},
		{"name", &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: deny}, nil},
		{"selector", &admissionregistrationv1.ParamRef{Selector: selector, ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}, nil},
		{"name and selector", &admissionregistrationv1.ParamRef{Name: "limits", Selector: selector, ParameterNotFoundAction: deny}, []want{
			{"FieldValueForbidden spec.paramRef.name", "name and selector are mutually exclusive"},
			{"FieldValueForbidden spec.paramRef.selector", "name and selector are mutually exclusive"},
		}},
		{"neither, no action", &admissionregistrationv1.ParamRef{}, []want{
			{"FieldValueRequired spec.paramRef", "one of name or selector must be specified"},
			{"FieldValueRequired spec.paramRef.parameterNotFoundAction", ""},
		}},
		{"bad name, selector and action", &admissionregistrationv1.ParamRef{Name: "..", ParameterNotFoundAction: ptr.To(admissionregistrationv1.ParameterNotFoundActionType("Ignore"))}, []want{
			{"FieldValueInvalid spec.paramRef.name", `may not be '..'`},
			{"FieldValueNotSupported spec.paramRef.parameterNotFoundAction", `supported values: "Deny", "Allow"`},
		}},
		{"bad selector", &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}, ParameterNotFoundAction: deny}, []want{
			{"FieldValueInvalid spec.paramRef.selector.matchLabels", "name part must consist of alphanumeric characters"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, ValidateParamRef(tt.ref, field.NewPath("spec", "paramRef")), tt.want...)
		})
	}
}

func TestValidateStaticSuffix(t *testing.T) {
	registrytest.ExpectWant(t, ValidateStaticSuffix("policy.example.com"))
	registrytest.ExpectWant(t, ValidateStaticSuffix("policy.static.k8s.io"), want{
		"FieldValueInvalid metadata.name", `names ending with ".static.k8s.io" are reserved for static manifest-based configurations and cannot be managed via the API`,
	})
}
