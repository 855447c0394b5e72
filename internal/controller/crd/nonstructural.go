package crd

import (
	"fmt"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The reasons and messages of the NonStructuralSchema condition, upstream's.
const (
	reasonViolations         = "Violations"
	reasonStructuralError    = "StructuralError"
	messageStructuralErrorFm = "failed to check validation schema for version %s: %v"
)

// nonStructural is crd's NonStructuralSchema condition, nil when every
// version's schema is structural (and spec.preserveUnknownFields is
// false): True with the violations as its message otherwise, or Unknown
// when a schema cannot even be read as one.
func nonStructural(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionCondition {
	var errs field.ErrorList
	if crd.Spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(field.NewPath("spec", "preserveUnknownFields"), true, "must be false"))
	}
	for i, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		s, err := structural(v.Schema)
		if err != nil {
			return &apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.NonStructuralSchema, Status: apiextensionsv1.ConditionUnknown,
				Reason: reasonStructuralError, Message: fmt.Sprintf(messageStructuralErrorFm, v.Name, err),
			}
		}
		errs = append(errs, schema.ValidateStructural(field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"), s)...)
	}
	if len(errs) == 0 {
		return nil
	}
	return &apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.NonStructuralSchema, Status: apiextensionsv1.ConditionTrue,
		Reason: reasonViolations, Message: errs.ToAggregate().Error(),
	}
}

// structural reads a version's schema as a structural schema.
func structural(v *apiextensionsv1.CustomResourceValidation) (*schema.Structural, error) {
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v, internal, nil); err != nil {
		return nil, fmt.Errorf("convert the schema: %w", err)
	}
	return schema.NewStructural(internal.OpenAPIV3Schema)
}
