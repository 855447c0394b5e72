package crd

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// nonStructuralSchema has a property without a type.
func nonStructuralSchema() *apiextensionsv1.CustomResourceValidation {
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type:       "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {}},
	}}
}

const nonStructuralMessage = "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"

func TestNonStructural(t *testing.T) {
	structural := newCRD("example.com", names("widgets", "Widget"))
	withVersion := func(schema *apiextensionsv1.CustomResourceValidation) *apiextensionsv1.CustomResourceDefinition {
		crd := structural.DeepCopy()
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Schema: schema})
		return crd
	}
	preserving := structural.DeepCopy()
	preserving.Spec.PreserveUnknownFields = true
	tests := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want *apiextensionsv1.CustomResourceDefinitionCondition
	}{
		{"structural", structural, nil},
		{"a version without a schema", withVersion(nil), nil},
		{"a version whose schema is not structural", withVersion(nonStructuralSchema()), &apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.NonStructuralSchema, Status: apiextensionsv1.ConditionTrue, Reason: reasonViolations,
			Message: nonStructuralMessage,
		}},
		{"preserveUnknownFields", preserving, &apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.NonStructuralSchema, Status: apiextensionsv1.ConditionTrue, Reason: reasonViolations,
			Message: "spec.preserveUnknownFields: Invalid value: true: must be false",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nonStructural(tt.crd); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
