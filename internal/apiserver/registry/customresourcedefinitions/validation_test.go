package customresourcedefinitions

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/registrytest"
)

// wantError is one expected error: its type and field ("FieldValueInvalid
// spec.versions") and a part of its detail.
type wantError struct {
	typeAndField string
	detail       string
}

func expect(t *testing.T, errs field.ErrorList, want []wantError) {
	t.Helper()
	var typesAndFields []string
	for _, w := range want {
		typesAndFields = append(typesAndFields, w.typeAndField)
	}
	registrytest.ExpectErrors(t, errs, typesAndFields...)
	for _, w := range want {
		registrytest.ExpectDetail(t, errs, strings.SplitN(w.typeAndField, " ", 2)[1], w.detail)
	}
}

// sizeRule is the spec.size schema with one CEL rule.
func sizeRule(props apiextensionsv1.JSONSchemaProps, rule string) func(*apiextensionsv1.CustomResourceDefinition) {
	return func(crd *apiextensionsv1.CustomResourceDefinition) {
		props.XValidations = apiextensionsv1.ValidationRules{{Rule: rule}}
		crd.Spec.Versions[0].Schema = schema(props)
	}
}

func TestValidateCreate(t *testing.T) {
	v2 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Schema: schema(apiextensionsv1.JSONSchemaProps{Type: "string"})}
	tests := []struct {
		name   string
		modify func(*apiextensionsv1.CustomResourceDefinition)
		want   []wantError
	}{
		{"valid", func(*apiextensionsv1.CustomResourceDefinition) {}, nil},
		{"valid cluster scoped with two versions and a rule", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope = apiextensionsv1.ClusterScoped
			crd.Spec.Versions = append(crd.Spec.Versions, v2)
			sizeRule(apiextensionsv1.JSONSchemaProps{Type: "integer"}, "self >= 0")(crd)
		}, nil},
		{"name is not plural.group", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Name = "widget.example.com" }, []wantError{
			{"FieldValueInvalid metadata.name", `must be spec.names.plural+"."+spec.group`},
		}},
		{"generateName", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.GenerateName = "widgets-" }, []wantError{
			{"FieldValueInvalid metadata.generateName", `must be spec.names.plural+"."+spec.group`},
		}},
		{"ObjectMeta errors are left to the handlers", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Labels = map[string]string{"bad key": "v"}
			crd.Namespace = "default"
		}, nil},
		{"no storage version", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions[0].Storage = false }, []wantError{
			{"FieldValueInvalid spec.versions", "must have exactly one version marked as storage version"},
			{"FieldValueInvalid status.storedVersions", "must have at least one stored version"},
		}},
		{"two storage versions", func(crd *apiextensionsv1.CustomResourceDefinition) {
			v := v2
			v.Storage = true
			crd.Spec.Versions = append(crd.Spec.Versions, v)
		}, []wantError{
			{"FieldValueInvalid spec.versions", "must have exactly one version marked as storage version"},
			{"FieldValueInvalid status.storedVersions", "must have the storage version v2"},
		}},
		{"no scope", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Scope = "" }, []wantError{
			{"FieldValueRequired spec.scope", ""},
		}},
		{"group without a dot", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Group, crd.Name = "example", "widgets.example"
		}, []wantError{
			{"FieldValueInvalid spec.group", "should be a domain with at least one dot"},
		}},
		{"no schema", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Versions[0].Schema = nil }, []wantError{
			{"FieldValueRequired spec.versions[0].schema.openAPIV3Schema", ""},
		}},
		{"non-structural schema", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Schema = schema(apiextensionsv1.JSONSchemaProps{})
		}, []wantError{
			{"FieldValueRequired spec.validation.openAPIV3Schema.properties[spec].properties[size].type", "must not be empty for specified object fields"},
		}},
		{"CEL rule that does not compile", sizeRule(apiextensionsv1.JSONSchemaProps{Type: "integer"}, "self >"), []wantError{
			{"FieldValueInvalid spec.validation.openAPIV3Schema.properties[spec].properties[size].x-kubernetes-validations[0].rule", "compilation failed"},
		}},
		{"CEL rule of the wrong type", sizeRule(apiextensionsv1.JSONSchemaProps{Type: "integer"}, "self"), []wantError{
			{"FieldValueInvalid spec.validation.openAPIV3Schema.properties[spec].properties[size].x-kubernetes-validations[0].rule", "must evaluate to a bool"},
		}},
		{"CEL rule too costly for an unbounded list", sizeRule(apiextensionsv1.JSONSchemaProps{
			Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}},
		}, "self.all(x, self.all(y, x == y))"), []wantError{
			{"FieldValueForbidden spec.validation.openAPIV3Schema.properties[spec].properties[size].x-kubernetes-validations[0].rule", "estimated rule cost exceeds budget"},
			{"FieldValueForbidden spec.validation.openAPIV3Schema.properties[spec].properties[size].x-kubernetes-validations[0].rule", "contributed to estimated rule cost total exceeding cost limit"},
			{"FieldValueForbidden spec.validation.openAPIV3Schema", "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget"},
		}},
		{"protected group without API approval", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Group, crd.Name = "widgets.k8s.io", "widgets.widgets.k8s.io"
		}, []wantError{
			{"FieldValueRequired metadata.annotations[api-approved.kubernetes.io]", "protected groups must have approval annotation"},
		}},
		{"preserveUnknownFields", func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.PreserveUnknownFields = true }, []wantError{
			{"FieldValueInvalid spec.preserveUnknownFields", "cannot set to true"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := widgets()
			tt.modify(crd)
			expect(t, create(crd), tt.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	established := []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	tests := []struct {
		name        string
		established bool
		modify      func(*apiextensionsv1.CustomResourceDefinition)
		want        []wantError
	}{
		{"new version", false, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Schema: schema(apiextensionsv1.JSONSchemaProps{Type: "string"})})
		}, nil},
		{"kind before established", false, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Names.Kind = "Gadget" }, nil},
		{"kind once established", true, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Names.Kind = "Gadget" }, []wantError{
			{"FieldValueInvalid spec.names.kind", "field is immutable"},
		}},
		{"scope once established", true, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Scope = apiextensionsv1.ClusterScoped }, []wantError{
			{"FieldValueInvalid spec.scope", "field is immutable"},
		}},
		{"group", false, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Group = "example.org" }, []wantError{
			{"FieldValueInvalid spec.group", "field is immutable"},
		}},
		{"plural", false, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Names.Plural = "gadgets" }, []wantError{
			{"FieldValueInvalid spec.names.plural", "field is immutable"},
		}},
		{"stored version removed from spec", false, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Name = "v2"
		}, []wantError{
			{"FieldValueInvalid status.storedVersions[0]", "missing from spec.versions; v1 was previously a storage version"},
		}},
		{"non-structural schema", false, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Schema = schema(apiextensionsv1.JSONSchemaProps{})
		}, []wantError{
			{"FieldValueRequired spec.validation.openAPIV3Schema.properties[spec].properties[size].type", "must not be empty for specified object fields"},
		}},
		{"new CEL rule that does not compile", false, sizeRule(apiextensionsv1.JSONSchemaProps{Type: "integer"}, "self >"), []wantError{
			{"FieldValueInvalid spec.validation.openAPIV3Schema.properties[spec].properties[size].x-kubernetes-validations[0].rule", "compilation failed"},
		}},
		{"ObjectMeta errors are left to the handlers", false, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name = "other.example.com"
			crd.Annotations = map[string]string{"bad key": "v"}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t, widgets())
			if tt.established {
				old.Status.Conditions = established
			}
			crd := old.DeepCopy()
			tt.modify(crd)
			expect(t, update(crd, old), tt.want)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*apiextensionsv1.CustomResourceDefinitionStatus)
		want   []wantError
	}{
		{"accepted names and conditions", func(s *apiextensionsv1.CustomResourceDefinitionStatus) {
			s.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}
			s.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
			s.ObservedGeneration = 1
		}, nil},
		{"invalid accepted names", func(s *apiextensionsv1.CustomResourceDefinitionStatus) {
			s.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "Widgets", Kind: "Widget", ListKind: "Widget", ShortNames: []string{"w_d"}}
		}, []wantError{
			{"FieldValueInvalid status.acceptedNames.plural", "a DNS-1035 label"},
			{"FieldValueInvalid status.acceptedNames.shortNames[0]", "a DNS-1035 label"},
			{"FieldValueInvalid status.acceptedNames.listKind", "kind and listKind may not be the same"},
		}},
		// Upstream's status validation does not look at storedVersions.
		{"storedVersions without the storage version", func(s *apiextensionsv1.CustomResourceDefinitionStatus) {
			s.StoredVersions = []string{"v9"}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t, widgets())
			crd := old.DeepCopy()
			tt.modify(&crd.Status)
			expect(t, updateStatus(crd, old), tt.want)
		})
	}
}

func TestValidateStatusUpdateIgnoresSpec(t *testing.T) {
	// A stored CRD whose spec today's rules reject (a rule that no longer
	// compiles) still takes status writes.
	old := stored(t, widgets())
	sizeRule(apiextensionsv1.JSONSchemaProps{Type: "integer"}, "self >")(old)
	crd := old.DeepCopy()
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	expect(t, updateStatus(crd, old), nil)
}

func TestObjectMetaLeftToHandlers(t *testing.T) {
	bad := func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Labels = map[string]string{"bad key": "v"}
		crd.Namespace = "default"
	}
	old := stored(t, widgets())
	crd := old.DeepCopy()
	bad(crd)
	internal, errs := toInternal(crd)
	oldInternal, oldErrs := toInternal(old)
	if errs != nil || oldErrs != nil {
		t.Fatal(errs, oldErrs)
	}
	upstream := map[string]field.ErrorList{
		"create": validation.ValidateCustomResourceDefinition(context.Background(), internal),
		"update": validation.ValidateCustomResourceDefinitionUpdate(context.Background(), internal, oldInternal),
		"status": validation.ValidateUpdateCustomResourceDefinitionStatus(context.Background(), internal, oldInternal),
	}
	ours := map[string]field.ErrorList{
		"create": Resource().ValidateCreate(crd),
		"update": Resource().ValidateUpdate(crd, old),
		"status": Resource().ValidateStatusUpdate(crd, old),
	}
	for op, errs := range upstream {
		// Upstream reports the labels (and the namespace, ...); so do the handlers.
		registrytest.ExpectDetail(t, errs, "metadata.labels", "name part must consist of alphanumeric characters")
		if len(ours[op]) > 0 {
			t.Errorf("%s: %v", op, ours[op])
		}
	}
}
