package admissionregutil

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/cel/environment"

	"orch/internal/apiserver/registry/registrytest"
)

func TestValidateMatchConditions(t *testing.T) {
	cond := func(name, expr string) admissionregistrationv1.MatchCondition {
		return admissionregistrationv1.MatchCondition{Name: name, Expression: expr}
	}
	tooMany := make([]admissionregistrationv1.MatchCondition, 65)
	for i := range tooMany {
		tooMany[i] = cond(fmt.Sprintf("c%d", i), "true")
	}
	tests := []struct {
		name   string
		conds  []admissionregistrationv1.MatchCondition
		params bool
		want   []want
	}{
		{"request, object, namespace, authorizer", []admissionregistrationv1.MatchCondition{
			cond("a", `request.userInfo.username != "admin" && has(object.metadata)`),
			cond("example.com/b", `namespaceObject == null || authorizer.group("").resource("pods").check("get").allowed()`),
		}, false, nil},
		{"params with a paramKind", []admissionregistrationv1.MatchCondition{cond("a", "params.enabled == true")}, true, nil},
		{"params without", []admissionregistrationv1.MatchCondition{cond("a", "params.enabled == true")}, false, []want{
			{"FieldValueInvalid matchConditions[0].expression", "undeclared reference to 'params'"},
		}},
		{"variables are not in scope", []admissionregistrationv1.MatchCondition{cond("a", "variables.x")}, false, []want{
			{"FieldValueInvalid matchConditions[0].expression", "undeclared reference to 'variables'"},
		}},
		{"syntax error", []admissionregistrationv1.MatchCondition{cond("a", "object.")}, false, []want{
			{"FieldValueInvalid matchConditions[0].expression", "compilation failed: ERROR: <input>:1:8: Syntax error"},
		}},
		{"not a bool", []admissionregistrationv1.MatchCondition{cond("a", "'yes'")}, false, []want{
			{"FieldValueInvalid matchConditions[0].expression", "must evaluate to bool but got string"},
		}},
		{"empty expression and name", []admissionregistrationv1.MatchCondition{cond("", " ")}, false, []want{
			{"FieldValueRequired matchConditions[0].expression", ""},
			{"FieldValueRequired matchConditions[0].name", ""},
		}},
		{"name not a qualified name, and twice", []admissionregistrationv1.MatchCondition{cond("a b", "true"), cond("a b", "true")}, false, []want{
			{"FieldValueInvalid matchConditions[0].name", "name part must consist of alphanumeric characters"},
			{"FieldValueInvalid matchConditions[1].name", "name part must consist of alphanumeric characters"},
			{"FieldValueDuplicate matchConditions[1].name", ""},
		}},
		{"65 conditions", tooMany, false, []want{{"FieldValueTooMany matchConditions", "must have at most 64 items"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, ValidateMatchConditions(tt.conds, tt.params, nil, field.NewPath("matchConditions")), tt.want...)
		})
	}
}

func TestExpressions(t *testing.T) {
	variable := func(name, expr string) admissionregistrationv1.Variable {
		return admissionregistrationv1.Variable{Name: name, Expression: expr}
	}
	tests := []struct {
		name        string
		composition bool
		params      bool
		variables   []admissionregistrationv1.Variable
		validation  string
		want        []want
	}{
		{"validation with a variable", true, false, []admissionregistrationv1.Variable{variable("replicas", "object.spec.replicas")},
			"variables.replicas <= 5", nil},
		{"variables see the ones before them", true, true, []admissionregistrationv1.Variable{
			variable("limit", "params.limit"), variable("over", "object.spec.replicas > variables.limit"),
		}, "!variables.over", nil},
		{"variables cannot see the ones after them", true, false, []admissionregistrationv1.Variable{
			variable("a", "variables.b"), variable("b", "1"),
		}, "true", []want{{"FieldValueInvalid spec.variables[0].expression", "undefined field 'b'"}}},
		{"no variables without composition", false, false, nil, "variables.x", []want{
			{"FieldValueInvalid spec.validations[0].expression", "undeclared reference to 'variables'"},
		}},
		{"variable names", true, false, []admissionregistrationv1.Variable{variable("1x", "1"), variable("namespace", "1"), variable(" ", "")}, "true", []want{
			{"FieldValueInvalid spec.variables[0].name", "must be a valid CEL identifier"},
			{"FieldValueInvalid spec.variables[1].name", "must be a valid CEL identifier"},
			{"FieldValueRequired spec.variables[2].name", "name is not specified"},
			{"FieldValueRequired spec.variables[2].expression", "expression is not specified"},
		}},
		{"variables need composition", false, false, []admissionregistrationv1.Variable{variable("x", "1")}, "true", []want{
			{"InternalError spec.variables[0]", "variable composition is not allowed"},
		}},
		{"validation not a bool", false, false, nil, "object.metadata.name", []want{
			{"FieldValueInvalid spec.validations[0].expression", "must evaluate to bool but got dyn"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewExpressions(tt.composition, tt.params, nil)
			if err != nil {
				t.Fatal(err)
			}
			var errs field.ErrorList
			for i, v := range tt.variables {
				errs = append(errs, e.Variable(v, field.NewPath("spec", "variables").Index(i))...)
			}
			errs = append(errs, e.Compile(&Validation{Expression: tt.validation}, true, false, field.NewPath("spec", "validations").Index(0).Child("expression"))...)
			registrytest.ExpectWant(t, errs, tt.want...)
		})
	}
}

func TestExpressionTypes(t *testing.T) {
	tests := []struct {
		name       string
		accessor   func(string) plugincel.ExpressionAccessor
		authorizer bool
		patchTypes bool
		good, bad  string
		badDetail  string
	}{
		{"message is a string", func(e string) plugincel.ExpressionAccessor { return &MessageExpression{Expression: e} }, false, false,
			`"too many: " + string(object.spec.replicas)`, "1", "must evaluate to string but got int"},
		{"message has no authorizer", func(e string) plugincel.ExpressionAccessor { return &MessageExpression{Expression: e} }, false, false,
			`"x"`, `authorizer.group("").resource("pods").check("get").reason()`, "undeclared reference to 'authorizer'"},
		{"audit annotation is a string or null", func(e string) plugincel.ExpressionAccessor { return &AuditAnnotation{Expression: e} }, true, false,
			`"name: " + object.metadata.name`, "true", "must evaluate to one of [string null_type] but got bool"},
		{"apply configuration is an Object", func(e string) plugincel.ExpressionAccessor { return &patch.ApplyConfigurationCondition{Expression: e} }, true, true,
			`Object{metadata: Object.metadata{labels: {"a": "b"}}}`, `{"metadata": {}}`, "must evaluate to Object"},
		{"JSON patch is a list of JSONPatch", func(e string) plugincel.ExpressionAccessor { return &patch.JSONPatchCondition{Expression: e} }, true, true,
			`[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}]`, `[{"op": "add"}]`, "must evaluate to list(JSONPatch)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewExpressions(true, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := field.NewPath("expression")
			registrytest.ExpectWant(t, e.Compile(tt.accessor(tt.good), tt.authorizer, tt.patchTypes, p))
			errs := e.Compile(tt.accessor(tt.bad), tt.authorizer, tt.patchTypes, p)
			registrytest.ExpectWant(t, errs, want{"FieldValueInvalid expression", tt.badDetail})
		})
	}
}

// TestStoredExpressions checks which environment an expression compiles
// in: the stored one when the stored object had it, spaces aside.
func TestStoredExpressions(t *testing.T) {
	stored := StoredExpressions("  object.x == 1  ", "")
	for _, expr := range []string{"object.x == 1", " object.x == 1\n"} {
		if got := envType(stored, expr); got != environment.StoredExpressions {
			t.Errorf("envType(%q) = %s, want StoredExpressions", expr, got)
		}
	}
	if got := envType(stored, "object.x == 2"); got != environment.NewExpressions {
		t.Errorf("envType(new) = %s, want NewExpressions", got)
	}
	if got := envType(nil, "object.x == 1"); got != environment.NewExpressions {
		t.Errorf("envType with nothing stored = %s, want NewExpressions", got)
	}
}
