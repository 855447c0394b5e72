package customresource

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// The validators follow upstream's custom resource strategies, less the
// validation of the object's own ObjectMeta, which the generic handlers do
// for every resource. Its errors still decide, as upstream, whether the CEL
// rules run.

// validateCreate checks a new object: type meta, the OpenAPI schema, the
// scale paths, embedded resources' metadata, list-type invariants, then
// the CEL rules unless an earlier error makes their input unreliable.
func (s *strategy) validateCreate(obj runtime.Object) field.ErrorList {
	u, errs := s.unstructured(obj)
	if len(errs) > 0 {
		return errs
	}
	errs = append(errs, validation.ValidateCustomResource(nil, u.Object, s.schemaValidator)...)
	errs = append(errs, s.validateScale(u, true)...)
	errs = append(errs, objectmeta.Validate(context.Background(), nil, u.Object, s.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	metaErrs := apivalidation.ValidateObjectMetaAccessor(u, s.namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, s.validateCEL(append(metaErrs, errs...), u.Object, nil)...)
}

// validateUpdate checks an update, ratcheting: errors in values that did
// not change are forgiven (schema and CEL), and list-type invariants are
// checked only when the stored object kept them.
func (s *strategy) validateUpdate(obj, old runtime.Object) field.ErrorList {
	u, oldU, correlated, errs := s.updatePair(obj, old)
	if len(errs) > 0 {
		return errs
	}
	var opts []validation.ValidationOption
	var celOpts []cel.Option
	if correlated != nil {
		opts = append(opts, validation.WithRatcheting(correlated))
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
	}
	errs = append(errs, validation.ValidateCustomResourceUpdate(nil, u.Object, oldU.Object, s.schemaValidator, opts...)...)
	errs = append(errs, s.validateScale(u, true)...)
	errs = append(errs, objectmeta.Validate(context.Background(), nil, u.Object, s.structural, false)...)
	if oldErrs := listtype.ValidateListSetsAndMaps(nil, s.structural, oldU.Object); len(oldErrs) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	}
	metaErrs := apivalidation.ValidateObjectMetaAccessorUpdate(u, oldU, field.NewPath("metadata"))
	return append(errs, s.validateCEL(append(metaErrs, errs...), u.Object, oldU.Object, celOpts...)...)
}

// validateStatusUpdate checks a write through /status: only .status against
// its schema (ratcheting), the scale status paths, list-type invariants
// newly broken, and the CEL rules (which see the whole object).
func (s *strategy) validateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	u, oldU, correlated, errs := s.updatePair(obj, old)
	if len(errs) > 0 {
		return errs
	}
	var opts []validation.ValidationOption
	var celOpts []cel.Option
	if correlated != nil {
		opts = append(opts, validation.WithRatcheting(correlated.Key("status")))
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
	}
	if status, ok := u.Object["status"]; ok {
		errs = append(errs, validation.ValidateCustomResourceUpdate(field.NewPath("status"), status, oldU.Object["status"], s.statusValidator, opts...)...)
	}
	errs = append(errs, s.validateScale(u, false)...)
	if newErrs := listtype.ValidateListSetsAndMaps(nil, s.structural, u.Object); len(newErrs) > 0 {
		if oldErrs := listtype.ValidateListSetsAndMaps(nil, s.structural, oldU.Object); len(oldErrs) == 0 {
			errs = append(errs, newErrs...)
		}
	}
	metaErrs := apivalidation.ValidateObjectMetaAccessorUpdate(u, oldU, field.NewPath("metadata"))
	return append(errs, s.validateCEL(append(metaErrs, errs...), u.Object, oldU.Object, celOpts...)...)
}

// unstructured returns obj as a custom resource of this kind, or the
// errors upstream reports for a wrong type, kind or apiVersion.
func (s *strategy) unstructured(obj runtime.Object) (*unstructured.Unstructured, field.ErrorList) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, field.ErrorList{field.Invalid(field.NewPath(""), fmt.Sprintf("%T", obj), "must be a custom resource in JSON form")}
	}
	var errs field.ErrorList
	if u.GetKind() != s.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), fmt.Sprintf("must be %v", s.gvk.Kind)))
	}
	if want := s.gvk.GroupVersion().String(); u.GetAPIVersion() != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), fmt.Sprintf("must be %v", want)))
	}
	return u, errs
}

// correlate pairs the new object with the stored one for ratcheting; nil
// without a structural schema.
func (s *strategy) correlate(u, old *unstructured.Unstructured) *common.CorrelatedObject {
	if s.structural == nil {
		return nil
	}
	return common.NewCorrelatedObject(u.Object, old.Object, &model.Structural{Structural: s.structural})
}

// validateCEL runs the x-kubernetes-validations rules within upstream's
// cost budget, unless prior holds an error that makes the object's shape
// unreliable (then it says that the rules were not checked).
func (s *strategy) validateCEL(prior field.ErrorList, obj, old map[string]interface{}, opts ...cel.Option) field.ErrorList {
	validator := s.cel()
	if validator == nil {
		return nil
	}
	for _, err := range prior {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")}
		}
	}
	var oldObj interface{}
	if old != nil {
		oldObj = old
	}
	errs, _ := validator.Validate(context.Background(), nil, s.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return errs
}

// updatePair is obj and old as unstructured objects and what ratcheting
// correlates between them (nil when it is off).
func (s *strategy) updatePair(obj, old runtime.Object) (u, oldU *unstructured.Unstructured, correlated *common.CorrelatedObject, errs field.ErrorList) {
	if u, errs = s.unstructured(obj); len(errs) > 0 {
		return nil, nil, nil, errs
	}
	if oldU, errs = s.unstructured(old); len(errs) > 0 {
		return nil, nil, nil, errs
	}
	return u, oldU, s.correlate(u, oldU), nil
}
