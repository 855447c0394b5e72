package flowschemas

import (
	"reflect"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// schema is a valid flow schema for a team's service accounts and users,
// written as a user would (nothing defaulted).
func schema() *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{
					{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "team-a", Name: "*"}},
					{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}},
					{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "team-a"}},
				},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"", "apps"}, Resources: []string{"pods", "deployments"}, Namespaces: []string{"team-a"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/metrics", "/apis/*"}}},
			}},
		},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "flowcontrol.apiserver.k8s.io/v1" || r.Resource != "flowschemas" || r.Kind != "FlowSchema" ||
		r.SingularName != "flowschema" || r.Namespaced || !r.HasStatus || r.NameValidation != registry.NameSubdomain {
		t.Errorf("names: %+v", r)
	}
	if r.ShortNames != nil || r.Categories != nil {
		t.Errorf("short names %v, categories %v; upstream has none", r.ShortNames, r.Categories)
	}
	if _, ok := r.New().(*flowcontrolv1.FlowSchema); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*flowcontrolv1.FlowSchemaList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name       string
		precedence int32
		want       int32
	}{
		{"unset is 1000", 0, 1000},
		{"set is kept", 500, 500},
		{"a bad value is left to validation", -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := schema()
			fs.Spec.MatchingPrecedence = tt.precedence
			Resource().Default(fs)
			if fs.Spec.MatchingPrecedence != tt.want {
				t.Errorf("matchingPrecedence = %d, want %d", fs.Spec.MatchingPrecedence, tt.want)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	fs := schema()
	fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue}}
	registrytest.ExpectWant(t, registrytest.Create(Resource(), fs))
	if !reflect.DeepEqual(fs.Status, flowcontrolv1.FlowSchemaStatus{}) {
		t.Errorf("status = %+v, want empty", fs.Status)
	}
}

// TestBootstrap: every schema upstream's apiserver creates is valid here,
// defaulted or not.
func TestBootstrap(t *testing.T) {
	for _, fs := range append(append([]*flowcontrolv1.FlowSchema{}, bootstrap.MandatoryFlowSchemas...), bootstrap.SuggestedFlowSchemas...) {
		t.Run(fs.Name, func(t *testing.T) {
			registrytest.ExpectWant(t, registrytest.Create(Resource(), fs.DeepCopy()))
		})
	}
}

func TestCreate(t *testing.T) {
	rule := func(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.PolicyRulesWithSubjects { return &fs.Spec.Rules[0] }
	tests := []struct {
		name   string
		modify func(*flowcontrolv1.FlowSchema)
		want   []want
	}{
		{"valid", func(*flowcontrolv1.FlowSchema) {}, nil},
		{"no rules, no distinguisher, the highest precedence", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules, fs.Spec.DistinguisherMethod, fs.Spec.MatchingPrecedence = nil, nil, 10000
		}, nil},
		{"wildcards and cluster scope", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).ResourceRules = []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true}}
			rule(fs).NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, {Verbs: []string{"get"}, NonResourceURLs: []string{"/"}}}
		}, nil},
		{"precedence out of range", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = -5 }, []want{
			{"FieldValueInvalid spec.matchingPrecedence", "must be a positive value"},
		}},
		{"precedence too high", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 }, []want{
			{"FieldValueInvalid spec.matchingPrecedence", "must not be greater than 10000"},
		}},
		{"precedence 1 is exempt's", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 }, []want{
			{"FieldValueInvalid spec.matchingPrecedence", "only the schema named 'exempt' may have matchingPrecedence 1"},
		}},
		{"unknown distinguisher method", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod.Type = "ByPhaseOfTheMoon" }, []want{
			{"FieldValueNotSupported spec.distinguisherMethod.type", `supported values: "ByNamespace", "ByUser"`},
		}},
		{"no priority level", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" }, []want{
			{"FieldValueRequired spec.priorityLevelConfiguration.name", "must reference a priority level"},
		}},
		{"priority level name", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "Workload_Low" }, []want{
			{"FieldValueInvalid spec.priorityLevelConfiguration.name", "a lowercase RFC 1123 subdomain"},
		}},
		{"empty rule", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0] = flowcontrolv1.PolicyRulesWithSubjects{} }, []want{
			{"FieldValueRequired spec.rules[0].subjects", "subjects must contain at least one value"},
			{"FieldValueRequired spec.rules[0]", "at least one of resourceRules and nonResourceRules has to be non-empty"},
		}},
		{"subjects", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).Subjects = []flowcontrolv1.Subject{
				{Kind: "Robot"},
				{Kind: flowcontrolv1.SubjectKindServiceAccount, User: &flowcontrolv1.UserSubject{Name: "a"}, Group: &flowcontrolv1.GroupSubject{Name: "g"}},
				{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "Bad_Name", Namespace: "Bad.Namespace"}},
				{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{}},
				{Kind: flowcontrolv1.SubjectKindUser, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "sa", Namespace: "ns"}, Group: &flowcontrolv1.GroupSubject{Name: "g"}},
				{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{}},
				{Kind: flowcontrolv1.SubjectKindGroup, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "sa", Namespace: "ns"}, User: &flowcontrolv1.UserSubject{Name: "a"}},
				{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{}},
			}
		}, []want{
			{"FieldValueNotSupported spec.rules[0].subjects[0].kind", `supported values: "Group", "ServiceAccount", "User"`},
			{"FieldValueRequired spec.rules[0].subjects[1].serviceAccount", "serviceAccount is required when subject kind is 'ServiceAccount'"},
			{"FieldValueForbidden spec.rules[0].subjects[1].user", "user is forbidden when subject kind is not 'User'"},
			{"FieldValueForbidden spec.rules[0].subjects[1].group", "group is forbidden when subject kind is not 'Group'"},
			{"FieldValueInvalid spec.rules[0].subjects[2].serviceAccount.name", "a lowercase RFC 1123 subdomain"},
			{"FieldValueInvalid spec.rules[0].subjects[2].serviceAccount.namespace", "a lowercase RFC 1123 label"},
			{"FieldValueRequired spec.rules[0].subjects[3].serviceAccount.name", ""},
			{"FieldValueRequired spec.rules[0].subjects[3].serviceAccount.namespace", "must specify namespace for service account"},
			{"FieldValueRequired spec.rules[0].subjects[4].user", "user is required when subject kind is 'User'"},
			{"FieldValueForbidden spec.rules[0].subjects[4].serviceAccount", "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"},
			{"FieldValueForbidden spec.rules[0].subjects[4].group", ""},
			{"FieldValueRequired spec.rules[0].subjects[5].user.name", ""},
			{"FieldValueRequired spec.rules[0].subjects[6].group", "group is required when subject kind is 'Group'"},
			{"FieldValueForbidden spec.rules[0].subjects[6].serviceAccount", ""},
			{"FieldValueForbidden spec.rules[0].subjects[6].user", ""},
			{"FieldValueRequired spec.rules[0].subjects[7].group.name", ""},
		}},
		{"empty resource rule", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).ResourceRules = []flowcontrolv1.ResourcePolicyRule{{}}
		}, []want{
			{"FieldValueRequired spec.rules[0].resourceRules[0].verbs", "verbs must contain at least one value"},
			{"FieldValueRequired spec.rules[0].resourceRules[0].apiGroups", "resource rules must supply at least one api group"},
			{"FieldValueRequired spec.rules[0].resourceRules[0].resources", "resource rules must supply at least one resource"},
			{"FieldValueRequired spec.rules[0].resourceRules[0].namespaces", "resource rules that are not cluster scoped must supply at least one namespace"},
		}},
		{"wildcards with others", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).ResourceRules = []flowcontrolv1.ResourcePolicyRule{{
				Verbs: []string{"get", "*"}, APIGroups: []string{"*", "apps"}, Resources: []string{"pods", "*"}, Namespaces: []string{"*", "default"},
			}}
			rule(fs).NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*", "get"}, NonResourceURLs: []string{"/healthz", "*"}}}
		}, []want{
			{"FieldValueInvalid spec.rules[0].resourceRules[0].verbs", "if '*' is present, must not specify other verbs"},
			{"FieldValueInvalid spec.rules[0].resourceRules[0].apiGroups", "if '*' is present, must not specify other api groups"},
			{"FieldValueInvalid spec.rules[0].resourceRules[0].resources", "if '*' is present, must not specify other resources"},
			{"FieldValueInvalid spec.rules[0].resourceRules[0].namespaces", "if '*' is present, must not specify other namespaces"},
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].verbs", "if '*' is present, must not specify other verbs"},
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs", "if '*' is present, must not specify other non-resource URLs"},
		}},
		{"unknown verb, bad namespace", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).ResourceRules[0].Verbs = []string{"get", "escalate"}
			rule(fs).ResourceRules[0].Namespaces = []string{"team-a", "Team.B"}
		}, []want{
			{"FieldValueNotSupported spec.rules[0].resourceRules[0].verbs", `supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"`},
			{"FieldValueInvalid spec.rules[0].resourceRules[0].namespaces[1]", "each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label"},
		}},
		{"empty non-resource rule", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{}}
		}, []want{
			{"FieldValueRequired spec.rules[0].nonResourceRules[0].verbs", ""},
			{"FieldValueRequired spec.rules[0].nonResourceRules[0].nonResourceURLs", "nonResourceURLs must contain at least one value"},
		}},
		{"non-resource URLs", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).NonResourceRules[0].NonResourceURLs = []string{"", "healthz", "/a b", "/a//b", "/a*", "/*/*", "/apis/*"}
		}, []want{
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[0]", "must not be empty"},
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[1]", "must start with slash"},
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[2]", "must not contain white-space"},
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[3]", "must not contain double slash"},
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[4]", "wildcard can only do suffix matching"},
			{"FieldValueInvalid spec.rules[0].nonResourceRules[0].nonResourceURLs[5]", "wildcard can only do suffix matching"},
		}},
		{"exempt keeps its bootstrap spec", func(fs *flowcontrolv1.FlowSchema) {
			fs.Name, fs.Spec = "exempt", *bootstrap.MandatoryFlowSchemaExempt.Spec.DeepCopy()
		}, nil},
		{"exempt changed", func(fs *flowcontrolv1.FlowSchema) {
			fs.Name, fs.Spec = "exempt", *bootstrap.MandatoryFlowSchemaExempt.Spec.DeepCopy()
			fs.Spec.Rules[0].Subjects[0].Group.Name = "team-a"
		}, []want{{"FieldValueInvalid spec", "spec of 'exempt' must equal the fixed value"}}},
		{"catch-all changed", func(fs *flowcontrolv1.FlowSchema) {
			fs.Name, fs.Spec = "catch-all", *bootstrap.MandatoryFlowSchemaCatchAll.Spec.DeepCopy()
			fs.Spec.DistinguisherMethod = nil
		}, []want{{"FieldValueInvalid spec", "spec of 'catch-all' must equal the fixed value"}}},
		{"a suggested schema may change", func(fs *flowcontrolv1.FlowSchema) {
			fs.Name = "global-default"
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := schema()
			tt.modify(fs)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), fs), tt.want...)
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*flowcontrolv1.FlowSchema)
		want   []want
	}{
		{"new priority level", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "workload-high" }, nil},
		{"precedence cleared is defaulted again", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 0 }, nil},
		{"a rule broken", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects = nil }, []want{
			{"FieldValueRequired spec.rules[0].subjects", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := schema()
			Resource().Default(old)
			fs := old.DeepCopy()
			tt.modify(fs)
			registrytest.ExpectWant(t, registrytest.Update(Resource(), fs, old), tt.want...)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	tests := []struct {
		name       string
		conditions []flowcontrolv1.FlowSchemaCondition
		want       []want
	}{
		{"dangling", []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found"}}, nil},
		{"without a type, twice", []flowcontrolv1.FlowSchemaCondition{
			{Type: flowcontrolv1.FlowSchemaConditionDangling}, {Type: ""}, {Type: flowcontrolv1.FlowSchemaConditionDangling},
		}, []want{
			{"FieldValueRequired status.conditions[1].type", ""},
			{"FieldValueDuplicate status.conditions[2].type", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := schema()
			Resource().Default(old)
			fs := old.DeepCopy()
			fs.Status.Conditions = tt.conditions
			registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(fs, old), tt.want...)
		})
	}

	// A stored schema that today's rules reject still takes status writes.
	old := schema()
	old.Spec.MatchingPrecedence = 1
	fs := old.DeepCopy()
	fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue}}
	registrytest.ExpectWant(t, Resource().ValidateStatusUpdate(fs, old))
}
