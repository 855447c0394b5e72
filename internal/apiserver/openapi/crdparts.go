package openapi

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
)

// crdParts is what one CRD adds to the documents. A Documents keeps the
// parts of its CRDs so that the next WithCRDs reuses them while the CRD's
// spec is the same.
type crdParts struct {
	spec apiextensionsv1.CustomResourceDefinitionSpec // a copy, to tell whether the CRD changed
	err  error                                        // why the parts could not be built

	// v2 definitions and paths the built-in document does not have.
	defs, paths map[string]json.RawMessage
	// The CRD's v3 document in each group version path ("apis/g/v1") that
	// has no built-in document.
	v3 map[string]*spec3.OpenAPI
}

// buildCRD builds the parts of every served version of crd with upstream's
// builder, as upstream's OpenAPI controllers do. d is a built-in Documents.
func (d *Documents) buildCRD(crd *apiextensionsv1.CustomResourceDefinition) *crdParts {
	p := &crdParts{spec: *crd.Spec.DeepCopy(), defs: map[string]json.RawMessage{}, paths: map[string]json.RawMessage{}, v3: map[string]*spec3.OpenAPI{}}
	if p.err = checkNames(crd); p.err != nil {
		return p
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if p.err = d.addVersion(p, crd, v.Name); p.err != nil {
			p.err = fmt.Errorf("version %q: %w", v.Name, p.err)
			return p
		}
	}
	return p
}

func (d *Documents) addVersion(p *crdParts, crd *apiextensionsv1.CustomResourceDefinition, version string) error {
	s2, err := builder.BuildOpenAPIV2(crd, version, builder.Options{V2: true, IncludeSelectableFields: true})
	if err != nil {
		return err
	}
	// The built-in v2 document has no defaults; neither do the CRDs' parts.
	for name, def := range handler.PruneDefaults(s2.Definitions) {
		if _, builtIn := d.defs[name]; builtIn {
			continue // the metadata types every CRD refers to
		}
		if p.defs[name], err = json.Marshal(def); err != nil {
			return fmt.Errorf("encoding definition %s: %w", name, err)
		}
	}
	if s2.Paths != nil {
		for path, item := range s2.Paths.Paths {
			if d.v2PathNames[path] {
				continue
			}
			if p.paths[path], err = json.Marshal(item); err != nil {
				return fmt.Errorf("encoding path %s: %w", path, err)
			}
		}
	}

	gvPath := groupVersionPath(schema.GroupVersion{Group: crd.Spec.Group, Version: version})
	if _, builtIn := d.v3[gvPath]; builtIn {
		return nil // the built-in document of this group version wins
	}
	if p.v3[gvPath], err = builder.BuildOpenAPIV3(crd, version, builder.Options{IncludeSelectableFields: true}); err != nil {
		return err
	}
	return nil
}

// checkNames makes sure crd has the names the builder needs (it indexes
// into the kind).
func checkNames(crd *apiextensionsv1.CustomResourceDefinition) error {
	n := crd.Spec.Names
	if crd.Spec.Group == "" || n.Kind == "" || n.ListKind == "" || n.Plural == "" {
		return fmt.Errorf("needs spec.group, spec.names.kind, spec.names.listKind and spec.names.plural (it has %q, %q, %q and %q)",
			crd.Spec.Group, n.Kind, n.ListKind, n.Plural)
	}
	return nil
}
