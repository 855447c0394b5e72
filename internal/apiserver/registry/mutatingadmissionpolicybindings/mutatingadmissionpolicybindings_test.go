package mutatingadmissionpolicybindings

import (
	"reflect"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// binding is a valid binding, written as a user would (nothing defaulted).
func binding() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit-prod"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: "replica-limit.example.com",
		},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "admissionregistration.k8s.io/v1" || r.Resource != "mutatingadmissionpolicybindings" ||
		r.Kind != "MutatingAdmissionPolicyBinding" || r.SingularName != "mutatingadmissionpolicybinding" || r.Namespaced || r.HasStatus {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || !reflect.DeepEqual(r.Categories, []string{"api-extensions"}) {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*admissionregistrationv1.MutatingAdmissionPolicyBinding); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*admissionregistrationv1.MutatingAdmissionPolicyBindingList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	b := binding()
	Resource().Default(b)
	if b.Spec.MatchResources != nil || b.Spec.ParamRef != nil {
		t.Errorf("nothing is made up: %+v", b.Spec)
	}
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
	Resource().Default(b)
	mc := b.Spec.MatchResources
	if *mc.MatchPolicy != admissionregistrationv1.Equivalent || mc.NamespaceSelector == nil || mc.ObjectSelector == nil {
		t.Errorf("match resources defaults: %+v", mc)
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
		want   []want
	}{
		{"valid", func(*admissionregistrationv1.MutatingAdmissionPolicyBinding) {}, nil},
		{"params and match resources", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}}
		}, nil},
		{"nothing", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec = admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{}
		}, []want{{"FieldValueRequired spec.policyName", ""}}},
		{"policy name", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) { b.Spec.PolicyName = "Replica_Limit" }, []want{
			{"FieldValueInvalid spec.policyName", "a lowercase RFC 1123 subdomain"},
		}},
		{"param ref", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "a/b", ParameterNotFoundAction: ptr.To(admissionregistrationv1.ParameterNotFoundActionType("Ignore"))}
		}, []want{
			{"FieldValueInvalid spec.paramRef.name", "may not contain '/'"},
			{"FieldValueNotSupported spec.paramRef.parameterNotFoundAction", `supported values: "Deny", "Allow"`},
		}},
		{"match resources, and DELETE", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"*", "v1"}, Resources: []string{"deployments"}},
				},
			}}}
		}, []want{
			{"FieldValueInvalid spec.matchResources.resourceRules[0].apiVersions", "if '*' is present, must not specify other API versions"},
			{"FieldValueNotSupported spec.matchResources.resourceRules.operations", `supported values: "*", "CONNECT", "CREATE", "UPDATE"`},
		}},
		{"reserved name", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Name = "replica-limit.static.k8s.io"
		}, []want{
			{"FieldValueInvalid metadata.name", "reserved for static manifest-based configurations"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := binding()
			tt.modify(b)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), b), tt.want...)
			if b.Generation != 1 {
				t.Errorf("generation = %d, want 1", b.Generation)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name           string
		modify         func(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
		wantGeneration int64
		want           []want
	}{
		{"labels", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Labels = map[string]string{"a": "b"}
		}, 1, nil},
		{"policy", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			b.Spec.PolicyName = "other.example.com"
		}, 2, nil},
		{"invalid", func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) { b.Spec.PolicyName = "" }, 2, []want{
			{"FieldValueRequired spec.policyName", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := binding()
			Resource().Default(old)
			old.Generation = 1
			b := old.DeepCopy()
			tt.modify(b)
			registrytest.ExpectWant(t, registrytest.Update(Resource(), b, old), tt.want...)
			if b.Generation != tt.wantGeneration {
				t.Errorf("generation = %d, want %d", b.Generation, tt.wantGeneration)
			}
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	b := binding()
	b.CreationTimestamp = created
	row := r.Row(b, created.Add(5*time.Minute))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"replica-limit-prod", "replica-limit.example.com", "<unset>", "5m"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "prod"}
	if got := r.Row(b, created.Time)[2]; got != "prod/limits" {
		t.Errorf("paramRef cell = %v", got)
	}
	var headers []string
	for _, col := range r.Columns {
		headers = append(headers, col.Name)
	}
	if !reflect.DeepEqual(headers, []string{"Name", "PolicyName", "ParamRef", "Age"}) {
		t.Errorf("kubectl get shows %v", headers)
	}
}
