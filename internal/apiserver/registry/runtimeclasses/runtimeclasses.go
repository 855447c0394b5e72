// Package runtimeclasses is the registry entry for node.k8s.io/v1
// runtimeclasses, with upstream's validation (the handler a DNS label that
// never changes, the overhead checked as a container's limits, the
// scheduling node selector and tolerations) and table. Admitting pods by
// their runtime class (adding its overhead and scheduling) is not done here.
package runtimeclasses

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
)

// Resource returns the runtimeclasses entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: nodev1.SchemeGroupVersion,
		Resource:     "runtimeclasses",
		Kind:         "RuntimeClass",
		SingularName: "runtimeclass",
		New:          func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList:      func() runtime.Object { return &nodev1.RuntimeClassList{} },
		Validate:     validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return apivalidation.ValidateImmutableField(obj.(*nodev1.RuntimeClass).Handler, old.(*nodev1.RuntimeClass).Handler, field.NewPath("handler"))
		},
		Columns: columns,
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			rc := obj.(*nodev1.RuntimeClass)
			return []interface{}{rc.Name, rc.Handler, registry.Age(rc.CreationTimestamp, now)}
		},
	}
}

// columns are upstream's, whose Handler column takes its description
// from ObjectMeta, which has no "handler": it is empty.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Handler", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["handler"]},
	{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func validate(obj runtime.Object) field.ErrorList {
	rc := obj.(*nodev1.RuntimeClass)
	var errs field.ErrorList
	if p := field.NewPath("handler"); rc.Handler == "" {
		errs = append(errs, field.Required(p, ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
			errs = append(errs, field.Invalid(p, rc.Handler, msg))
		}
	}
	if rc.Overhead != nil {
		// As upstream, the fixed overhead is checked as a container's limits,
		// and errors name overhead.limits[...].
		limits := &corev1.ResourceRequirements{Limits: rc.Overhead.PodFixed}
		errs = append(errs, podspec.ValidateContainerResources(limits, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		p := field.NewPath("scheduling")
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		errs = append(errs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
	}
	return errs
}

// validateTolerations checks each toleration as a pod's, and that no two
// have the same key, operator, value and effect.
func validateTolerations(tolerations []corev1.Toleration, p *field.Path) field.ErrorList {
	errs := podspec.ValidateTolerations(tolerations, p)
	seen := map[corev1.Toleration]bool{}
	for i, t := range tolerations {
		key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
		if seen[key] {
			errs = append(errs, field.Duplicate(p.Index(i), t))
		}
		seen[key] = true
	}
	return errs
}
