// Package volumeattributesclasses is the registry entry for
// storage.k8s.io/v1 volumeattributesclasses, with upstream's validation
// (a driver name and at least one parameter, as a storage class's
// provisioner and parameters, neither of which may change) and table.
package volumeattributesclasses

import (
	"reflect"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/storageclasses"
)

// Resource returns the volumeattributesclasses entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   storagev1.SchemeGroupVersion,
		Resource:       "volumeattributesclasses",
		Kind:           "VolumeAttributesClass",
		SingularName:   "volumeattributesclass",
		ShortNames:     []string{"vac"},
		New:            func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
		NewList:        func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "DriverName", Type: "string", Description: storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			c := obj.(*storagev1.VolumeAttributesClass)
			return []interface{}{c.Name, c.DriverName, registry.Age(c.CreationTimestamp, now)}
		},
	}
}

func validate(obj runtime.Object) field.ErrorList {
	c := obj.(*storagev1.VolumeAttributesClass)
	errs := storageclasses.ValidateProvisioner(c.DriverName, field.NewPath("driverName"))
	return append(errs, storageclasses.ValidateParameters(c.Parameters, false, field.NewPath("parameters"))...)
}

func validateUpdate(obj, old runtime.Object) field.ErrorList {
	c, oldC := obj.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass)
	var errs field.ErrorList
	if c.DriverName != oldC.DriverName {
		errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
	}
	if !reflect.DeepEqual(c.Parameters, oldC.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	return errs
}
