// Package customresourcedefinitions is the registry entry for
// apiextensions.k8s.io/v1 customresourcedefinitions: the CRD objects
// themselves, with upstream's defaulting, create and update preparation,
// validation (structural schemas, CEL rules and their cost) and table.
// Serving the custom resources a CRD defines, and the conditions a CRD's
// status reports, are done elsewhere.
package customresourcedefinitions

import (
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
)

// Resource returns the customresourcedefinitions entry.
//
// Validate is nil on purpose: upstream validates a new CRD and an updated
// one with two separate, complete functions, which ValidateCreate and
// ValidateUpdate call.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:         apiextensionsv1.SchemeGroupVersion,
		Resource:             "customresourcedefinitions",
		Kind:                 "CustomResourceDefinition",
		SingularName:         "customresourcedefinition",
		ShortNames:           []string{"crd", "crds"},
		Categories:           []string{"api-extensions"},
		New:                  func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:              func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		HasStatus:            true,
		Default:              setDefaults,
		PrepareForCreate:     prepareForCreate,
		PrepareForUpdate:     prepareForUpdate,
		ValidateCreate:       validateCreate,
		ValidateUpdate:       validateUpdate,
		ValidateStatusUpdate: validateStatusUpdate,
		Columns:              columns,
		Row:                  row,
	}
}

func setDefaults(obj runtime.Object) {
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition))
}

// prepareForCreate starts a new CRD with an empty status that records the
// storage version as stored. The handlers set generation 1.
func prepareForCreate(obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	recordStorageVersion(crd)
}

// prepareForUpdate records the storage version of an updated spec as stored.
// The handlers have already put the stored status back on a write to the
// main resource and bump the generation when the spec changes; they also call
// this on writes through /status, which are the only ones where the status
// can differ from the stored one here. Upstream's status strategy leaves
// storedVersions as the writer sent them, so those are left alone.
func prepareForUpdate(obj, old runtime.Object) {
	crd, oldCRD := obj.(*apiextensionsv1.CustomResourceDefinition), old.(*apiextensionsv1.CustomResourceDefinition)
	if !apiequality.Semantic.DeepEqual(crd.Status, oldCRD.Status) {
		return
	}
	recordStorageVersion(crd)
}

// recordStorageVersion appends the version marked as storage to
// status.storedVersions unless it is there already.
func recordStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	storage, err := apihelpers.GetCRDStorageVersion(crd)
	if err != nil || apihelpers.IsStoredVersion(crd, storage) {
		return // no storage version: validation says so
	}
	crd.Status.StoredVersions = append(crd.Status.StoredVersions, storage)
}
