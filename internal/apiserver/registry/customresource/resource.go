// Package customresource is the registry entry for the custom resources of
// one served version of a CustomResourceDefinition: names, structural
// pruning and defaulting, OpenAPI and CEL validation, status and scale
// subresources, printer columns and selectable fields, as upstream's
// apiextensions-apiserver serves them. Objects are *unstructured.Unstructured.
// It does no I/O: the apiserver builds a Resource from a CRD it has read.
package customresource

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/apiserver/registry"
)

// Resource returns the registry entry for version of crd. The version must
// be served or be the storage version. It fails only on a CRD that upstream
// could not serve either (no such version, a schema that does not convert).
//
// Objects given to the returned functions must be *unstructured.Unstructured
// of this version (Default, Prune and the validators ignore or report
// anything else).
func Resource(crd *apiextensionsv1.CustomResourceDefinition, version string) (registry.Resource, error) {
	v, err := findVersion(crd, version)
	if err != nil {
		return registry.Resource{}, err
	}
	names := servedNames(crd)
	gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
	s, err := newStrategy(crd, v, gv.WithKind(names.Kind))
	if err != nil {
		return registry.Resource{}, fmt.Errorf("custom resource %q version %q: %w", crd.Name, version, err)
	}
	listKind := names.ListKind
	if listKind == "" {
		listKind = names.Kind + "List"
	}
	printer := newTable(v.AdditionalPrinterColumns)
	res := registry.Resource{
		GroupVersion: gv,
		Resource:     names.Plural,
		Kind:         names.Kind,
		SingularName: names.Singular,
		Namespaced:   crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		ShortNames:   names.ShortNames,
		Categories:   names.Categories,
		New: func() runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gv.WithKind(names.Kind))
			return u
		},
		NewList: func() runtime.Object {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gv.WithKind(listKind))
			return l
		},
		HasStatus:        s.status,
		Default:          s.defaults,
		Prune:            s.prune,
		PrepareForCreate: s.prepareForCreate,
		PrepareForUpdate: s.prepareForUpdate,
		// Upstream validates an update with ratcheting (errors on unchanged
		// fields are forgiven), which full validation on every update would
		// undo: the whole-object checks run on create only, and updates have
		// their own.
		ValidateCreate: s.validateCreate,
		ValidateUpdate: s.validateUpdate,
		// Upstream's custom resource validation checks metadata.name as a
		// DNS-1123 subdomain (besides the generic path-segment check).
		NameValidation:   registry.NameSubdomain,
		Columns:          printer.columns,
		Row:              printer.row,
		SelectableFields: newSelectableFields(v.SelectableFields),
	}
	if s.status {
		res.ValidateStatusUpdate = s.validateStatusUpdate
	}
	if s.scale != nil {
		res.Scale = scaleAccessor(s.scale)
	}
	return res, nil
}

// findVersion returns the named version of crd, if it is served or stored.
func findVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) (*apiextensionsv1.CustomResourceDefinitionVersion, error) {
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Name != name {
			continue
		}
		if !v.Served && !v.Storage {
			return nil, fmt.Errorf("custom resource %q: version %q is neither served nor stored", crd.Name, name)
		}
		return v, nil
	}
	return nil, fmt.Errorf("custom resource %q has no version %q", crd.Name, name)
}

// servedNames are the names upstream serves: the accepted ones, which the
// naming controller copies from spec.names once they do not conflict; spec.names
// while nothing has accepted them yet.
func servedNames(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionNames {
	if crd.Status.AcceptedNames.Plural != "" && crd.Status.AcceptedNames.Kind != "" {
		return crd.Status.AcceptedNames
	}
	return crd.Spec.Names
}
