// Package resourceslices is the registry entry for resource.k8s.io/v1
// resourceslices, with upstream's defaults, validation, generation, table
// and field selectors (spec.nodeName, spec.driver, spec.pool.name).
// Publishing slices is the drivers' work.
package resourceslices

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/drautil"
)

// Resource returns the resourceslices entry. Validate is nil: an update
// does not check again the capacity and taints of a device that kept
// them, and may not move the slice to another driver, pool or node.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     resourcev1.SchemeGroupVersion,
		Resource:         "resourceslices",
		Kind:             "ResourceSlice",
		SingularName:     "resourceslice",
		New:              func() runtime.Object { return &resourcev1.ResourceSlice{} },
		NewList:          func() runtime.Object { return &resourcev1.ResourceSliceList{} },
		Default:          setDefaults,
		PrepareForCreate: prepareForCreate,
		PrepareForUpdate: prepareForUpdate,
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validateSpec(&obj.(*resourcev1.ResourceSlice).Spec, nil)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateSpec(&obj.(*resourcev1.ResourceSlice).Spec, &old.(*resourcev1.ResourceSlice).Spec)
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Node", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]},
			{Name: "Driver", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]},
			{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			s := obj.(*resourcev1.ResourceSlice)
			return []interface{}{s.Name, nodeName(s), s.Spec.Driver, s.Spec.Pool.Name, registry.Age(s.CreationTimestamp, now)}
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			s := obj.(*resourcev1.ResourceSlice)
			return fields.Set{
				resourcev1.ResourceSliceSelectorNodeName: nodeName(s),
				resourcev1.ResourceSliceSelectorDriver:   s.Spec.Driver,
				resourcev1.ResourceSliceSelectorPoolName: s.Spec.Pool.Name,
			}
		},
	}
}

func nodeName(s *resourcev1.ResourceSlice) string {
	if s.Spec.NodeName == nil {
		return ""
	}
	return *s.Spec.NodeName
}

// setDefaults is upstream's: device taints without timeAdded get the
// current time.
func setDefaults(obj runtime.Object) {
	s := obj.(*resourcev1.ResourceSlice)
	for i := range s.Spec.Devices {
		for j := range s.Spec.Devices[i].Taints {
			drautil.DefaultTaint(&s.Spec.Devices[i].Taints[j])
		}
	}
}

// prepareForCreate starts the generation at 1 and drops the fields of
// features off by default.
func prepareForCreate(obj runtime.Object) {
	s := obj.(*resourcev1.ResourceSlice)
	s.Generation = 1
	dropDisabledFields(&s.Spec)
}

// prepareForUpdate moves the generation on when the spec changes (as sent,
// before disabled fields are dropped, as upstream).
func prepareForUpdate(obj, old runtime.Object) {
	s, oldS := obj.(*resourcev1.ResourceSlice), old.(*resourcev1.ResourceSlice)
	if !apiequality.Semantic.DeepEqual(s.Spec, oldS.Spec) {
		s.Generation = oldS.Generation + 1
	}
	dropDisabledFields(&s.Spec)
}

// dropDisabledFields removes what alpha features, off by default
// upstream, add: list-type attributes, compatibility groups of counter
// consumption, node allocatable resources, the partition type attribute
// and optional node operations.
func dropDisabledFields(spec *resourcev1.ResourceSliceSpec) {
	spec.PartitionTypeAttribute = nil
	spec.SkipNodeOperations = nil
	for i := range spec.Devices {
		d := &spec.Devices[i]
		d.NodeAllocatableResources = nil
		for j := range d.ConsumesCounters {
			d.ConsumesCounters[j].CompatibilityGroups = nil
		}
		for name, a := range d.Attributes {
			if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
				a.BoolValues, a.IntValues, a.StringValues, a.VersionValues = nil, nil, nil, nil
				d.Attributes[name] = a
			}
		}
	}
}
