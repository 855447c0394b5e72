// Package controllerrevisions is the registry entry for apps/v1
// controllerrevisions, the revision history of stateful sets and daemon sets.
package controllerrevisions

import (
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
)

// Resource returns the controllerrevisions entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: appsv1.SchemeGroupVersion,
		Resource:     "controllerrevisions",
		Kind:         "ControllerRevision",
		SingularName: "controllerrevision",
		Namespaced:   true,
		New:          func() runtime.Object { return &appsv1.ControllerRevision{} },
		NewList:      func() runtime.Object { return &appsv1.ControllerRevisionList{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			rev := obj.(*appsv1.ControllerRevision)
			var errs field.ErrorList
			if rev.Data.Raw == nil && rev.Data.Object == nil {
				errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
			}
			return append(errs, apivalidation.ValidateNonnegativeField(rev.Revision, field.NewPath("revision"))...)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			rev, oldRev := obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
			if !apiequality.Semantic.DeepEqual(rev.Data, oldRev.Data) {
				return field.ErrorList{field.Invalid(field.NewPath("data"), rev.Data, apivalidation.FieldImmutableErrorMsg)}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Controller", Type: "string", Description: "Controller of the object"},
			{Name: "Revision", Type: "string", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			rev := obj.(*appsv1.ControllerRevision)
			return []interface{}{rev.Name, controller(rev), rev.Revision, registry.Age(rev.CreationTimestamp, now)}
		},
	}
}

// controller names the owner of a revision as kind.group/name, e.g.
// "statefulset.apps/web", or "<none>".
func controller(rev *appsv1.ControllerRevision) string {
	ref := metav1.GetControllerOf(rev)
	if ref == nil {
		return "<none>"
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ref.Name
	}
	gk := gv.WithKind(ref.Kind).GroupKind()
	if gk.Empty() {
		return ref.Name
	}
	return strings.ToLower(gk.String()) + "/" + ref.Name
}
