// Package apiservices is the registry entry for apiregistration.k8s.io/v1
// apiservices and their status subresource, with upstream's defaults,
// create preparation, validation and table. Proxying requests to the
// services an APIService names, and the availability its status reports
// for them, are done elsewhere.
package apiservices

import (
	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

	"orch/internal/apiserver/registry"
)

// Resource returns the apiservices entry.
//
// Validate checks a new APIService and an update through the main
// resource alike, as upstream does; ValidateStatusUpdate replaces it for
// writes through /status. PrepareForUpdate is nil: what upstream's
// strategies do on an update (the main resource keeps the stored status,
// /status keeps the stored spec and metadata) the handlers do for every
// resource with a status.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:         apiregistrationv1.SchemeGroupVersion,
		Resource:             "apiservices",
		Kind:                 "APIService",
		SingularName:         "apiservice",
		Categories:           []string{"api-extensions"},
		New:                  func() runtime.Object { return &apiregistrationv1.APIService{} },
		NewList:              func() runtime.Object { return &apiregistrationv1.APIServiceList{} },
		HasStatus:            true,
		StatusMeta:           registry.StatusKeepsMeta,
		Default:              setDefaults,
		PrepareForCreate:     prepareForCreate,
		Validate:             validate,
		ValidateStatusUpdate: validateStatusUpdate,
		NameValidation:       registry.NamePathSegment,
		Columns:              columns,
		Row:                  row,
	}
}

// setDefaults is upstream's: a service reference without a port gets 443.
func setDefaults(obj runtime.Object) {
	apiregistrationv1.SetObjectDefaults_APIService(obj.(*apiregistrationv1.APIService))
}

// prepareForCreate starts an APIService with an empty status, except that
// a local one (served by this apiserver, no service) is available at once,
// as upstream marks it.
func prepareForCreate(obj runtime.Object) {
	s := obj.(*apiregistrationv1.APIService)
	s.Status = apiregistrationv1.APIServiceStatus{}
	if s.Spec.Service == nil {
		helper.SetAPIServiceCondition(s, helper.NewLocalAvailableAPIServiceCondition())
	}
}
