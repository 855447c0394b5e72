package openapi

import (
	"fmt"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"
)

// CRDTypeConverter returns the server-side apply type converter of crd's
// custom resources, for the field manager of its version version: built,
// as upstream's CRD handler builds it, from the schemas of every version of
// crd (field managers convert managed fields between versions) on top of
// d's built-in definitions (ObjectMeta, ...). Lists and maps merge as the
// schemas' x-kubernetes-list-type, -list-map-keys and -map-type say.
//
// When a version's schema is missing or not structural the fields are
// deduced from the objects (every list atomic), as upstream does when it
// has no schema to go by.
func (d *Documents) CRDTypeConverter(crd *apiextensionsv1.CustomResourceDefinition, version string) (managedfields.TypeConverter, error) {
	if crd == nil {
		return nil, fmt.Errorf("openapi: no CustomResourceDefinition given")
	}
	if err := checkNames(crd); err != nil {
		return nil, fmt.Errorf("openapi: CustomResourceDefinition %q: %w", crd.Name, err)
	}
	found := false
	for _, v := range crd.Spec.Versions {
		found = found || v.Name == version
		structural, err := isStructural(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("openapi: CustomResourceDefinition %q version %q: %w", crd.Name, v.Name, err)
		}
		if !structural {
			return managedfields.NewDeducedTypeConverter(), nil
		}
	}
	if !found {
		return nil, fmt.Errorf("openapi: CustomResourceDefinition %q has no version %q", crd.Name, version)
	}

	specs := []*spec3.OpenAPI{{Components: &spec3.Components{Schemas: d.defs}}}
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, fmt.Errorf("openapi: CustomResourceDefinition %q version %q: %w", crd.Name, v.Name, err)
		}
		specs = append(specs, s)
	}
	// The built-in definitions come first: the CRDs' copies of the metadata
	// types they share are left out.
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, fmt.Errorf("openapi: CustomResourceDefinition %q: %w", crd.Name, err)
	}
	converter, err := managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("openapi: CustomResourceDefinition %q: server-side apply types: %w", crd.Name, err)
	}
	return converter, nil
}

// isStructural reports whether the schema of version of crd is a
// structural schema, the only kind the builder turns into types.
func isStructural(crd *apiextensionsv1.CustomResourceDefinition, version string) (bool, error) {
	v, err := apiextensionshelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return false, err
	}
	if v == nil || v.OpenAPIV3Schema == nil {
		return false, nil
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v, internal, nil); err != nil {
		return false, fmt.Errorf("converting the schema: %w", err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return false, nil
	}
	return len(structuralschema.ValidateStructural(nil, s)) == 0, nil
}
