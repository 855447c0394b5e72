package customresource

import (
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// strategy is what one version of a CRD needs at request time, built once
// from the CRD as upstream's crdHandler builds its crdInfo.
type strategy struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	// structural is the structural schema with defaults pruned; nil when the
	// version has no schema, or when a CRD that preserves unknown fields
	// has a schema that is not structural (then nothing is pruned,
	// defaulted or checked by CEL, as upstream).
	structural *structuralschema.Structural
	// preserveUnknownFields is spec.preserveUnknownFields (legacy CRDs):
	// no pruning.
	preserveUnknownFields bool
	// schemaValidator checks the whole object against the OpenAPI schema;
	// statusValidator only .status (nil without a status schema or subresource).
	schemaValidator validation.SchemaValidator
	statusValidator validation.SchemaValidator
	// celValidator (nil when the schema has no x-kubernetes-validations)
	// is compiled at the first validation, not when the version is
	// served: a definition nobody writes objects of costs no compiled
	// programs (Gateway API's four definitions have about 13 MB of them).
	celOnce      sync.Once
	celValidator *cel.Validator
	status       bool
	scale        *apiextensionsv1.CustomResourceSubresourceScale
}

func newStrategy(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, gvk schema.GroupVersionKind) (*strategy, error) {
	s := &strategy{
		gvk:                   gvk,
		namespaced:            crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		preserveUnknownFields: crd.Spec.PreserveUnknownFields,
	}
	if v.Subresources != nil {
		s.status = v.Subresources.Status != nil
		s.scale = v.Subresources.Scale.DeepCopy()
	}
	var props *apiextensions.JSONSchemaProps
	if v.Schema != nil {
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("converting the schema: %w", err)
		}
		props = internal.OpenAPIV3Schema
		structural, err := newStructural(props, crd.Spec.PreserveUnknownFields)
		if err != nil {
			return nil, err
		}
		s.structural = structural
	}
	var err error
	if s.schemaValidator, _, err = validation.NewSchemaValidator(props); err != nil {
		return nil, fmt.Errorf("building the schema validator: %w", err)
	}
	if s.status && props != nil {
		if statusProps, ok := props.Properties["status"]; ok {
			if s.statusValidator, _, err = validation.NewSchemaValidator(&statusProps); err != nil {
				return nil, fmt.Errorf("building the status schema validator: %w", err)
			}
		}
	}
	return s, nil
}

// cel is the version's CEL validator, compiled once on first use.
func (s *strategy) cel() *cel.Validator {
	s.celOnce.Do(func() { s.celValidator = cel.NewValidator(s.structural, true, celconfig.PerCallLimit) })
	return s.celValidator
}

// newStructural is the structural schema upstream serves a version with.
// A schema that does not convert is an error unless the CRD preserves
// unknown fields (a legacy CRD upstream still serves, unpruned and
// undefaulted, with the NonStructuralSchema condition).
func newStructural(props *apiextensions.JSONSchemaProps, preserveUnknownFields bool) (*structuralschema.Structural, error) {
	structural, err := structuralschema.NewStructural(props)
	if preserveUnknownFields {
		if err != nil {
			return nil, nil
		}
		return structural, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the schema is not structural: %w", err)
	}
	// Defaults share memory with the CRD: work on a copy.
	structural = structural.DeepCopy()
	if err := defaulting.PruneDefaults(structural); err != nil {
		return nil, fmt.Errorf("pruning the schema's defaults: %w", err)
	}
	return structural, nil
}
