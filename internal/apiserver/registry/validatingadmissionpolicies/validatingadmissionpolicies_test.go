package validatingadmissionpolicies

import (
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// policy is a valid policy limiting deployments' replicas, written as a
// user would (nothing defaulted).
func policy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit.example.com"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5"}},
		},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "admissionregistration.k8s.io/v1" || r.Resource != "validatingadmissionpolicies" ||
		r.Kind != "ValidatingAdmissionPolicy" || r.SingularName != "validatingadmissionpolicy" || r.Namespaced || !r.HasStatus {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || !reflect.DeepEqual(r.Categories, []string{"api-extensions"}) {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*admissionregistrationv1.ValidatingAdmissionPolicy); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*admissionregistrationv1.ValidatingAdmissionPolicyList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	p := policy()
	Resource().Default(p)
	mc := p.Spec.MatchConstraints
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *mc.MatchPolicy != admissionregistrationv1.Equivalent ||
		!reflect.DeepEqual(mc.NamespaceSelector, &metav1.LabelSelector{}) || !reflect.DeepEqual(mc.ObjectSelector, &metav1.LabelSelector{}) ||
		*mc.ResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults: %+v %+v", p.Spec, mc)
	}

	p = policy()
	p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	p.Spec.MatchConstraints = nil
	Resource().Default(p)
	if *p.Spec.FailurePolicy != admissionregistrationv1.Ignore || p.Spec.MatchConstraints != nil {
		t.Errorf("values set are kept, no match constraints made up: %+v", p.Spec)
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		want   []want
	}{
		{"valid", func(*admissionregistrationv1.ValidatingAdmissionPolicy) {}, nil},
		{"params, variables, messages, reasons, audit annotations", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "ReplicaLimit"}
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-exempt", Expression: `!("exempt" in object.metadata.labels)`}}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "replicas", Expression: "object.spec.replicas"}}
			p.Spec.Validations = []admissionregistrationv1.Validation{{
				Expression:        "variables.replicas <= params.maxReplicas",
				Message:           "too many replicas",
				MessageExpression: `"replicas must be at most " + string(params.maxReplicas)`,
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}}
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "high-replicas", ValueExpression: `"replicas: " + string(variables.replicas)`}}
		}, nil},
		{"audit annotations only", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = nil
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "replicas", ValueExpression: "null"}}
		}, nil},
		{"nothing to match or check", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec = admissionregistrationv1.ValidatingAdmissionPolicySpec{}
		}, []want{
			{"FieldValueRequired spec.matchConstraints", ""},
			{"FieldValueRequired spec.validations", "validations or auditAnnotations must contain at least one item"},
			{"FieldValueRequired spec.auditAnnotations", "validations or auditAnnotations must contain at least one item"},
		}},
		{"failure policy", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType("Retry"))
		}, []want{{"FieldValueNotSupported spec.failurePolicy", `supported values: "Fail", "Ignore"`}}},
		{"no resource rules", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = nil
		}, []want{
			{"FieldValueRequired spec.matchConstraints.resourceRules", ""},
		}},
		{"expressions", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []admissionregistrationv1.Validation{
				{Expression: " "},
				{Expression: "object.spec.replicas <"},
				{Expression: "object.spec.replicas"},
				{Expression: "params.max > 1"},
			}
		}, []want{
			{"FieldValueRequired spec.validations[0].expression", "expression is not specified"},
			{"FieldValueInvalid spec.validations[1].expression", "compilation failed: ERROR: <input>:1:23: Syntax error"},
			{"FieldValueInvalid spec.validations[2].expression", "must evaluate to bool but got dyn"},
			{"FieldValueInvalid spec.validations[3].expression", "undeclared reference to 'params'"},
		}},
		{"messages and reason", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []admissionregistrationv1.Validation{
				{Expression: "true", Message: " ", MessageExpression: " ", Reason: ptr.To(metav1.StatusReasonNotFound)},
				{Expression: "true", Message: "two\nlines", MessageExpression: "object.spec.replicas"},
			}
		}, []want{
			{"FieldValueInvalid spec.validations[0].messageExpression", "must be non-empty if specified"},
			{"FieldValueInvalid spec.validations[0].message", "must be non-empty if specified"},
			{"FieldValueNotSupported spec.validations[0].reason", `supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"`},
			{"FieldValueInvalid spec.validations[1].messageExpression", "must evaluate to string but got dyn"},
			{"FieldValueInvalid spec.validations[1].message", "must not contain line breaks"},
		}},
		{"variables", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "in", Expression: "1"}, {Name: "x", Expression: "variables.y"}}
		}, []want{
			{"FieldValueInvalid spec.variables[0].name", "must be a valid CEL identifier"},
			{"FieldValueInvalid spec.variables[1].expression", "undefined field 'y'"},
		}},
		{"audit annotations", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
				{Key: "bad key", ValueExpression: "1"},
				{Key: "a", ValueExpression: " "},
				{Key: "a", ValueExpression: `"` + strings.Repeat("x", 5*1024) + `"`},
			}
		}, []want{
			{"FieldValueInvalid spec.auditAnnotations[0].key", "name part must consist of alphanumeric characters"},
			{"FieldValueInvalid spec.auditAnnotations[0].valueExpression", "must evaluate to one of [string null_type] but got int"},
			{"FieldValueRequired spec.auditAnnotations[1].valueExpression", "valueExpression is not specified"},
			{"FieldValueRequired spec.auditAnnotations[2].valueExpression", "must not exceed 5120 bytes in length"},
			{"FieldValueDuplicate spec.auditAnnotations[2].key", ""},
		}},
		{"21 audit annotations", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			for i := 0; i < 21; i++ {
				p.Spec.AuditAnnotations = append(p.Spec.AuditAnnotations, admissionregistrationv1.AuditAnnotation{Key: string(rune('a' + i)), ValueExpression: "null"})
			}
		}, []want{{"FieldValueInvalid spec.auditAnnotations", "must not have more than 20 auditAnnotations"}}},
		{"reserved name", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Name = "replica-limit.static.k8s.io" }, []want{
			{"FieldValueInvalid metadata.name", "reserved for static manifest-based configurations"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy()
			tt.modify(p)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), p), tt.want...)
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	p := policy()
	p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 3, TypeChecking: &admissionregistrationv1.TypeChecking{}}
	registrytest.ExpectWant(t, registrytest.Create(Resource(), p))
	if !reflect.DeepEqual(p.Status, admissionregistrationv1.ValidatingAdmissionPolicyStatus{}) {
		t.Errorf("status = %+v, want empty", p.Status)
	}
}

func TestUpdate(t *testing.T) {
	brokenCondition := []admissionregistrationv1.MatchCondition{{Name: "old", Expression: "no such thing"}}
	tests := []struct {
		name   string
		stored func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		modify func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		want   []want
	}{
		{"new validation", func(*admissionregistrationv1.ValidatingAdmissionPolicy) {}, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: "has(object.spec.template)"})
		}, nil},
		{"stored match conditions are not compiled again", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = brokenCondition
		}, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}, nil},
		{"unless the paramKind changes", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = brokenCondition
		}, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		}, []want{{"FieldValueInvalid spec.matchConditions[0].expression", "compilation failed"}}},
		{"reserved name, stored", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Name = "replica-limit.static.k8s.io" },
			func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Labels = map[string]string{"a": "b"} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := policy()
			tt.stored(old)
			Resource().Default(old)
			p := old.DeepCopy()
			tt.modify(p)
			registrytest.ExpectWant(t, registrytest.Update(Resource(), p, old), tt.want...)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	condition := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Checked", LastTransitionTime: metav1.Now()}
	tests := []struct {
		name   string
		status admissionregistrationv1.ValidatingAdmissionPolicyStatus
		want   []want
	}{
		{"type checking and conditions", admissionregistrationv1.ValidatingAdmissionPolicyStatus{
			ObservedGeneration: 1,
			TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{
				{FieldRef: "spec.validations[0].expression", Warning: "apps/v1, Kind=Deployment: no such key: replica"},
			}},
			Conditions: []metav1.Condition{condition},
		}, nil},
		{"warnings without warning or field", admissionregistrationv1.ValidatingAdmissionPolicyStatus{
			TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{
				{FieldRef: " "}, {FieldRef: "spec.validations[0", Warning: "w"},
			}},
		}, []want{
			{"FieldValueRequired status.typeChecking.expressionWarnings[0].warning", ""},
			{"FieldValueRequired status.typeChecking.expressionWarnings[0].fieldRef", ""},
			{"FieldValueInvalid status.typeChecking.expressionWarnings[1].fieldRef", "invalid JSONPath"},
		}},
		{"condition without reason", admissionregistrationv1.ValidatingAdmissionPolicyStatus{
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now()}},
		}, []want{{"FieldValueRequired status.conditions[0].reason", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := policy()
			Resource().Default(old)
			p := old.DeepCopy()
			p.Status = tt.status
			registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(p, old), tt.want...)
		})
	}

	// A stored policy that today's rules reject still takes status writes.
	old := policy()
	old.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "no such thing"}}
	p := old.DeepCopy()
	p.Status.Conditions = []metav1.Condition{condition}
	registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(p, old))
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	p := policy()
	p.CreationTimestamp = created
	row := r.Row(p, created.Add(48*time.Hour))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"replica-limit.example.com", int64(1), "<unset>", "2d"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "ReplicaLimit"}
	if got := r.Row(p, created.Time)[2]; got != "example.com/v1/ReplicaLimit" {
		t.Errorf("paramKind cell = %v", got)
	}
	var headers []string
	for _, col := range r.Columns {
		headers = append(headers, col.Name)
	}
	if !reflect.DeepEqual(headers, []string{"Name", "Validations", "ParamKind", "Age"}) {
		t.Errorf("kubectl get shows %v", headers)
	}
}
