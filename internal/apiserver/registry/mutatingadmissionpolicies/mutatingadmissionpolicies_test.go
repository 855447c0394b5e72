package mutatingadmissionpolicies

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

// policy is a valid policy adding a label to new deployments, written as a
// user would (nothing defaulted).
func policy() *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "team-label.example.com"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}},
			},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"team": "web"}}}`,
				},
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// addLabel is a JSON patch expression that adds a label.
const addLabel = `[JSONPatch{op: "add", path: "/metadata/labels/team", value: "web"}]`

func jsonPatch(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "admissionregistration.k8s.io/v1" || r.Resource != "mutatingadmissionpolicies" ||
		r.Kind != "MutatingAdmissionPolicy" || r.SingularName != "mutatingadmissionpolicy" || r.Namespaced || r.HasStatus {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || !reflect.DeepEqual(r.Categories, []string{"api-extensions"}) {
		t.Errorf("short names %v, categories %v", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*admissionregistrationv1.MutatingAdmissionPolicy); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*admissionregistrationv1.MutatingAdmissionPolicyList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	p := policy()
	p.Spec.ReinvocationPolicy = ""
	Resource().Default(p)
	mc := p.Spec.MatchConstraints
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *mc.MatchPolicy != admissionregistrationv1.Equivalent ||
		mc.NamespaceSelector == nil || mc.ObjectSelector == nil || *mc.ResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("defaults: %+v %+v", p.Spec, mc)
	}
	if p.Spec.ReinvocationPolicy != "" {
		t.Errorf("reinvocationPolicy = %q, upstream has no default", p.Spec.ReinvocationPolicy)
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*admissionregistrationv1.MutatingAdmissionPolicy)
		want   []want
	}{
		{"valid", func(*admissionregistrationv1.MutatingAdmissionPolicy) {}, nil},
		{"params, variables, JSON patch", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "enabled", Expression: `params.data.enabled == "true"`}}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "team", Expression: "params.data.team"}}
			p.Spec.Mutations = append(p.Spec.Mutations, jsonPatch(`[JSONPatch{op: "add", path: "/metadata/annotations/team", value: variables.team}]`))
			p.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
		}, nil},
		{"nothing", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec = admissionregistrationv1.MutatingAdmissionPolicySpec{}
		}, []want{
			{"FieldValueRequired spec.matchConstraints", ""},
			{"FieldValueRequired spec.mutations", "mutations must contain at least one item"},
			{"FieldValueRequired spec.reinvocationPolicy", ""},
		}},
		{"DELETE and reinvocation policy", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
			p.Spec.ReinvocationPolicy = "Always"
		}, []want{
			{"FieldValueNotSupported spec.matchConstraints.resourceRules.operations", `supported values: "*", "CONNECT", "CREATE", "UPDATE"`},
			{"FieldValueNotSupported spec.reinvocationPolicy", `supported values: "IfNeeded", "Never"`},
		}},
		{"patch types", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations = []admissionregistrationv1.Mutation{
				{},
				{PatchType: "MergePatch"},
				{PatchType: admissionregistrationv1.PatchTypeJSONPatch},
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration},
			}
		}, []want{
			{"FieldValueRequired spec.mutations[0].patchType", ""},
			{"FieldValueNotSupported spec.mutations[1].patchType", `supported values: "ApplyConfiguration", "JSONPatch"`},
			{"FieldValueRequired spec.mutations[2].jsonPatch", "must be specified when patchType is JSONPatch"},
			{"FieldValueRequired spec.mutations[3].applyConfiguration", "must be specified when patchType is ApplyConfiguration"},
		}},
		{"both patches", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			both := jsonPatch(addLabel)
			both.ApplyConfiguration = p.Spec.Mutations[0].ApplyConfiguration
			other := both
			other.PatchType = admissionregistrationv1.PatchTypeApplyConfiguration
			p.Spec.Mutations = []admissionregistrationv1.Mutation{both, other}
		}, []want{
			{"FieldValueInvalid spec.mutations[0].applyConfiguration", "must not be specified when patchType is JSONPatch"},
			{"FieldValueInvalid spec.mutations[1].jsonPatch", "must not be specified when patchType is ApplyConfiguration"},
		}},
		{"patch expressions", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations = []admissionregistrationv1.Mutation{
				jsonPatch(" "),
				jsonPatch(`{"op": "add"}`),
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "params.x"}},
			}
		}, []want{
			{"FieldValueRequired spec.mutations[0].jsonPatch.expression", ""},
			{"FieldValueInvalid spec.mutations[1].jsonPatch.expression", "must evaluate to list(JSONPatch)"},
			{"FieldValueInvalid spec.mutations[2].applyConfiguration.expression", "undeclared reference to 'params'"},
		}},
		{"variables", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "", Expression: "1"}, {Name: "x", Expression: "1 +"}}
		}, []want{
			{"FieldValueRequired spec.variables[0].name", "name is not specified"},
			{"FieldValueInvalid spec.variables[1].expression", "compilation failed"},
		}},
		{"reserved name", func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Name = "team-label.static.k8s.io" }, []want{
			{"FieldValueInvalid metadata.name", "reserved for static manifest-based configurations"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy()
			tt.modify(p)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), p), tt.want...)
			if p.Generation != 1 {
				t.Errorf("generation = %d, want 1", p.Generation)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	brokenCondition := []admissionregistrationv1.MatchCondition{{Name: "old", Expression: "no such thing"}}
	tests := []struct {
		name           string
		stored         func(*admissionregistrationv1.MutatingAdmissionPolicy)
		modify         func(*admissionregistrationv1.MutatingAdmissionPolicy)
		wantGeneration int64
		want           []want
	}{
		{"labels", func(*admissionregistrationv1.MutatingAdmissionPolicy) {}, func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Labels = map[string]string{"a": "b"}
		}, 1, nil},
		{"new mutation", func(*admissionregistrationv1.MutatingAdmissionPolicy) {}, func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations = append(p.Spec.Mutations, jsonPatch(addLabel))
		}, 2, nil},
		{"stored match conditions are not compiled again", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.MatchConditions = brokenCondition
		}, func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}, 2, nil},
		{"unless they change", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.MatchConditions = brokenCondition
		}, func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: "new", Expression: "true"})
		}, 2, []want{{"FieldValueInvalid spec.matchConditions[0].expression", "compilation failed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := policy()
			tt.stored(old)
			Resource().Default(old)
			old.Generation = 1
			p := old.DeepCopy()
			tt.modify(p)
			registrytest.ExpectWant(t, registrytest.Update(Resource(), p, old), tt.want...)
			if p.Generation != tt.wantGeneration {
				t.Errorf("generation = %d, want %d", p.Generation, tt.wantGeneration)
			}
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	p := policy()
	p.CreationTimestamp = created
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	row := r.Row(p, created.Add(30*time.Second))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"team-label.example.com", int64(1), "v1/ConfigMap", "30s"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	var headers []string
	for _, col := range r.Columns {
		headers = append(headers, col.Name)
	}
	if !reflect.DeepEqual(headers, []string{"Name", "Mutations", "ParamKind", "Age"}) {
		t.Errorf("kubectl get shows %v", headers)
	}
}
