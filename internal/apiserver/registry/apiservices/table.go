package apiservices

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

	"orch/internal/apiserver/registry"
)

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

// columns are upstream's table for APIServices: `kubectl get apiservices`
// shows the name, the service behind the API, whether it is available, and
// the age.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]},
	{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
	{Name: "Available", Type: "string", Description: "Whether this service is available."},
	{Name: "Age", Type: "string", Description: metaDocs["creationTimestamp"]},
}

// row gives "Local" for an API this apiserver serves, else the service as
// namespace/name; the Available condition's status ("Unknown" without one),
// with its reason when it is not True.
func row(obj runtime.Object, now time.Time) []interface{} {
	s := obj.(*apiregistrationv1.APIService)
	service := "Local"
	if ref := s.Spec.Service; ref != nil {
		service = ref.Namespace + "/" + ref.Name
	}
	return []interface{}{s.Name, service, available(s), registry.Age(s.CreationTimestamp, now)}
}

func available(s *apiregistrationv1.APIService) string {
	c := helper.GetAPIServiceConditionByType(s, apiregistrationv1.Available)
	switch {
	case c == nil:
		return string(apiregistrationv1.ConditionUnknown)
	case c.Status != apiregistrationv1.ConditionTrue && c.Reason != "":
		return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
	}
	return string(c.Status)
}
