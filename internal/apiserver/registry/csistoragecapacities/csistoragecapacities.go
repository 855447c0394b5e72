// Package csistoragecapacities is the registry entry for storage.k8s.io/v1
// csistoragecapacities, with upstream's validation (a valid node topology
// selector and storage class name, both fixed once set, and a capacity
// that is not negative) and table.
package csistoragecapacities

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the csistoragecapacities entry.
func Resource() registry.Resource {
	docs := storagev1.CSIStorageCapacity{}.SwaggerDoc()
	return registry.Resource{
		GroupVersion:   storagev1.SchemeGroupVersion,
		Resource:       "csistoragecapacities",
		Kind:           "CSIStorageCapacity",
		SingularName:   "csistoragecapacity",
		Namespaced:     true,
		New:            func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
		NewList:        func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		// Upstream's table has no Age column.
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "StorageClassName", Type: "string", Description: docs["storageClassName"]},
			{Name: "Capacity", Type: "string", Description: docs["capacity"]},
		},
		Row: func(obj runtime.Object, _ time.Time) []interface{} {
			c := obj.(*storagev1.CSIStorageCapacity)
			capacity := "<unset>"
			if c.Capacity != nil {
				capacity = c.Capacity.String()
			}
			return []interface{}{c.Name, c.StorageClassName, capacity}
		},
	}
}

// validate is upstream's: maximumVolumeSize is not checked.
func validate(obj runtime.Object) field.ErrorList {
	c := obj.(*storagev1.CSIStorageCapacity)
	errs := metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), apivalidation.IsNegativeErrorMsg))
	}
	return errs
}

// validateUpdate keeps what a driver's GetCapacity call was asked with:
// the topology and the storage class.
func validateUpdate(obj, old runtime.Object) field.ErrorList {
	c, oldC := obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, oldC.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, apivalidation.FieldImmutableErrorMsg))
	}
	if c.StorageClassName != oldC.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}
