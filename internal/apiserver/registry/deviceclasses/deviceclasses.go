// Package deviceclasses is the registry entry for resource.k8s.io/v1
// deviceclasses, with upstream's validation (CEL selectors compiled in
// upstream's environment), generation and table.
package deviceclasses

import (
	"context"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/drautil"
)

// Resource returns the deviceclasses entry. Validate is nil: an update
// checks again only the selectors and configuration that changed.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     resourcev1.SchemeGroupVersion,
		Resource:         "deviceclasses",
		Kind:             "DeviceClass",
		SingularName:     "deviceclass",
		New:              func() runtime.Object { return &resourcev1.DeviceClass{} },
		NewList:          func() runtime.Object { return &resourcev1.DeviceClassList{} },
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validateSpec(&obj.(*resourcev1.DeviceClass).Spec, nil)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateSpec(&obj.(*resourcev1.DeviceClass).Spec, &old.(*resourcev1.DeviceClass).Spec)
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			c := obj.(*resourcev1.DeviceClass)
			return []interface{}{c.Name, registry.Age(c.CreationTimestamp, now)}
		},
	}
}

// prepareForCreate starts the generation at 1, as upstream does.
func prepareForCreate(obj runtime.Object) {
	obj.(*resourcev1.DeviceClass).Generation = 1
}

// prepareForUpdate moves the generation on when the spec changes.
func prepareForUpdate(obj, old runtime.Object) {
	c, oldC := obj.(*resourcev1.DeviceClass), old.(*resourcev1.DeviceClass)
	if !apiequality.Semantic.DeepEqual(c.Spec, oldC.Spec) {
		c.Generation = oldC.Generation + 1
	}
}

// validateSpec checks at most 32 selectors and 32 configurations, and the
// extended resource name. Selectors (and configurations) exactly as
// stored in old are not checked again, so that a class stays writable
// when upstream tightens its rules.
func validateSpec(spec, old *resourcev1.DeviceClassSpec) field.ErrorList {
	p := field.NewPath("spec")
	storedSelectors := old != nil && apiequality.Semantic.DeepEqual(spec.Selectors, old.Selectors)
	errs := drautil.ValidateSelectors(spec.Selectors, storedSelectors, p.Child("selectors"))
	storedConfig := old != nil && apiequality.Semantic.DeepEqual(spec.Config, old.Config)
	errs = append(errs, drautil.ValidateList(spec.Config, resourcev1.DeviceConfigMaxSize, p.Child("config"),
		func(c resourcev1.DeviceClassConfiguration, p *field.Path) field.ErrorList {
			return drautil.ValidateConfiguration(c.DeviceConfiguration, storedConfig, p)
		})...)
	if name := spec.ExtendedResourceName; name != nil {
		errs = append(errs, validate.ExtendedResourceName(context.Background(), operation.Operation{}, p.Child("extendedResourceName"), name, nil)...)
	}
	return errs
}
