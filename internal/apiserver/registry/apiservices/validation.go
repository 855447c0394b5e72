package apiservices

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"
)

// validate runs upstream's validation of an APIService, on create and on
// update through the main resource (upstream's update validation adds only
// the generic ObjectMeta update checks, which the handlers run). It holds
// the rule that the name is <spec.version>.<spec.group>.
func validate(obj runtime.Object) field.ErrorList {
	s, errs := toInternal(obj)
	if errs != nil {
		return errs
	}
	return withoutObjectMeta(s, validation.ValidateAPIService(context.Background(), s))
}

// validateStatusUpdate runs upstream's validation of a write through
// /status: each condition's status is True, False or Unknown. The
// ObjectMeta update checks upstream adds, the handlers run.
func validateStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	s, errs := toInternal(obj)
	if errs != nil {
		return errs
	}
	return validation.ValidateAPIServiceStatus(&s.Status, field.NewPath("status"))
}

// toInternal converts a v1 APIService to the internal type upstream's
// validation takes, with kube-aggregator's generated conversion (which
// needs no conversion scope).
func toInternal(obj runtime.Object) (*apiregistration.APIService, field.ErrorList) {
	out := &apiregistration.APIService{}
	if err := apiregistrationv1.Convert_v1_APIService_To_apiregistration_APIService(obj.(*apiregistrationv1.APIService), out, nil); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), "", fmt.Sprintf("cannot be read: %v", err))}
	}
	return out, nil
}

// withoutObjectMeta drops the errors upstream's validation reports about
// ObjectMeta, which the handlers already report from the same generic
// checks (including that the name is a path segment). What stays is the
// rule only APIServices have: a name (or generateName) that is a valid path
// segment must still be <spec.version>.<spec.group>.
func withoutObjectMeta(s *apiregistration.APIService, errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		if isMeta(e.Field) && !nameRule(s, e) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func isMeta(path string) bool {
	return path == "metadata" || strings.HasPrefix(path, "metadata.")
}

// nameRule is true for upstream's error that a name, or a generateName,
// which passes the path segment check is not <spec.version>.<spec.group>.
func nameRule(s *apiregistration.APIService, e *field.Error) bool {
	if e.Type != field.ErrorTypeInvalid {
		return false
	}
	switch e.Field {
	case "metadata.name":
		return s.Name != "" && len(content.IsPathSegmentName(s.Name)) == 0
	case "metadata.generateName":
		return s.GenerateName != "" && len(content.IsPathSegmentName(s.GenerateName)) == 0
	}
	return false
}
