package validatingadmissionpolicybindings

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
func binding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replica-limit-prod"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "replica-limit.example.com",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "admissionregistration.k8s.io/v1" || r.Resource != "validatingadmissionpolicybindings" ||
		r.Kind != "ValidatingAdmissionPolicyBinding" || r.SingularName != "validatingadmissionpolicybinding" || r.Namespaced || r.HasStatus {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || !reflect.DeepEqual(r.Categories, []string{"api-extensions"}) {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList); !ok {
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
		modify func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		want   []want
	}{
		{"valid", func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {}, nil},
		{"params and match resources", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
		}, nil},
		{"nothing", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec = admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}
		}, []want{
			{"FieldValueRequired spec.policyName", ""},
			{"FieldValueRequired spec.validationActions", "at least one validation action is required"},
		}},
		{"policy name", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.PolicyName = "Replica_Limit" }, []want{
			{"FieldValueInvalid spec.policyName", "a lowercase RFC 1123 subdomain"},
		}},
		{"param ref", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{}
		}, []want{
			{"FieldValueRequired spec.paramRef", "one of name or selector must be specified"},
			{"FieldValueRequired spec.paramRef.parameterNotFoundAction", ""},
		}},
		{"match resources", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}}}
		}, []want{
			{"FieldValueRequired spec.matchResources.excludeResourceRules[0].operations", ""},
			{"FieldValueRequired spec.matchResources.excludeResourceRules[0].apiGroups", ""},
			{"FieldValueRequired spec.matchResources.excludeResourceRules[0].apiVersions", ""},
			{"FieldValueRequired spec.matchResources.excludeResourceRules[0].resources", ""},
		}},
		{"actions", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{"Deny", "Log", "Warn", "Deny"}
		}, []want{
			{"FieldValueNotSupported spec.validationActions[1]", `supported values: "Audit", "Deny", "Warn"`},
			{"FieldValueDuplicate spec.validationActions[3]", ""},
			{"FieldValueInvalid spec.validationActions", "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"},
		}},
		{"reserved name", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
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
		modify         func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		wantGeneration int64
		want           []want
	}{
		{"labels", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Labels = map[string]string{"a": "b"}
		}, 1, nil},
		{"actions", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
		}, 2, nil},
		{"invalid", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.ValidationActions = nil }, 2, []want{
			{"FieldValueRequired spec.validationActions", "at least one validation action is required"},
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
