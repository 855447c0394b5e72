// Package devicetaintrules is the registry entry for resource.k8s.io/v1
// devicetaintrules and their status subresource, with upstream's defaults,
// validation, table, and its refusal of updates that give no
// resourceVersion. Tainting the selected devices (and evicting the pods
// that use them) is a controller's work.
package devicetaintrules

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/drautil"
)

// Resource returns the devicetaintrules entry. Validate is nil: an
// update does not check again an effect the taint already had, and a
// write through /status only checks the status.
func Resource() registry.Resource {
	taintDocs := resourcev1.DeviceTaint{}.SwaggerDoc()
	return registry.Resource{
		GroupVersion:                  resourcev1.SchemeGroupVersion,
		Resource:                      "devicetaintrules",
		Kind:                          "DeviceTaintRule",
		SingularName:                  "devicetaintrule",
		New:                           func() runtime.Object { return &resourcev1.DeviceTaintRule{} },
		NewList:                       func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
		HasStatus:                     true,
		UpdateRequiresResourceVersion: true,
		Default:                       func(obj runtime.Object) { drautil.DefaultTaint(&obj.(*resourcev1.DeviceTaintRule).Spec.Taint) },
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*resourcev1.DeviceTaintRule).Status = resourcev1.DeviceTaintRuleStatus{}
		},
		PrepareForUpdate: prepareForUpdate,
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validateSpec(&obj.(*resourcev1.DeviceTaintRule).Spec, nil)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateSpec(&obj.(*resourcev1.DeviceTaintRule).Spec, &old.(*resourcev1.DeviceTaintRule).Spec)
		},
		ValidateStatusUpdate: validateStatusUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Key", Type: "string", Description: taintDocs["key"]},
			{Name: "Value", Type: "string", Description: taintDocs["value"]},
			{Name: "Effect", Type: "string", Description: taintDocs["effect"]},
			{Name: "TimeAdded", Type: "string", Description: taintDocs["timeAdded"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: row,
	}
}

// prepareForUpdate stamps the taint with the current time when its effect
// changes and the client kept the old timeAdded, so that timeAdded tells
// since when the effect holds, as upstream. (The handlers keep the stored
// status and move the generation on when the spec changes.)
func prepareForUpdate(obj, old runtime.Object) {
	t, oldT := &obj.(*resourcev1.DeviceTaintRule).Spec.Taint, &old.(*resourcev1.DeviceTaintRule).Spec.Taint
	if t.Effect != oldT.Effect && t.TimeAdded.Equal(oldT.TimeAdded) {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}

// validateSpec checks the device selector's names and the taint; old is
// the stored spec on an update.
func validateSpec(spec, old *resourcev1.DeviceTaintRuleSpec) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if s := spec.DeviceSelector; s != nil {
		sp := p.Child("deviceSelector")
		if s.Driver != nil {
			errs = append(errs, drautil.ValidateDriverName(*s.Driver, sp.Child("driver"))...)
		}
		if s.Pool != nil {
			errs = append(errs, drautil.ValidatePoolName(*s.Pool, sp.Child("pool"))...)
		}
		if s.Device != nil {
			errs = append(errs, drautil.ValidateLabel(*s.Device, sp.Child("device"))...)
		}
	}
	var oldTaint *resourcev1.DeviceTaint
	if old != nil {
		oldTaint = &old.Taint
	}
	return append(errs, drautil.ValidateTaint(spec.Taint, oldTaint, p.Child("taint"))...)
}

// validateStatusUpdate checks the status: at most 8 valid conditions of
// distinct types.
func validateStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	conditions := obj.(*resourcev1.DeviceTaintRule).Status.Conditions
	p := field.NewPath("status", "conditions")
	errs := metav1validation.ValidateConditions(conditions, p)
	if len(conditions) > resourcev1.DeviceTaintRuleStatusMaxConditions {
		errs = append(errs, field.TooMany(p, len(conditions), resourcev1.DeviceTaintRuleStatusMaxConditions))
	}
	return errs
}

// row is upstream's: the taint (how long since it was added) and the age;
// the selector, possibly long, is left out.
func row(obj runtime.Object, now time.Time) []interface{} {
	r := obj.(*resourcev1.DeviceTaintRule)
	t := r.Spec.Taint
	added := ""
	if t.TimeAdded != nil {
		added = registry.Age(*t.TimeAdded, now)
	}
	return []interface{}{r.Name, t.Key, t.Value, string(t.Effect), added, registry.Age(r.CreationTimestamp, now)}
}
