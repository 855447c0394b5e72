// Package replicasets is the registry entry for apps/v1 replicasets.
package replicasets

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

// Resource returns the replicasets entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: appsv1.SchemeGroupVersion,
		Resource:     "replicasets",
		Kind:         "ReplicaSet",
		SingularName: "replicaset",
		Namespaced:   true,
		ShortNames:   []string{"rs"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList:      func() runtime.Object { return &appsv1.ReplicaSetList{} },
		HasStatus:    true,
		Scale: &registry.ScaleAccessor{
			SpecReplicas: func(obj runtime.Object) int32 { return replicas(obj.(*appsv1.ReplicaSet)) },
			SetSpecReplicas: func(obj runtime.Object, n int32) {
				obj.(*appsv1.ReplicaSet).Spec.Replicas = &n
			},
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.ReplicaSet).Status.Replicas },
			Selector: func(obj runtime.Object) string {
				return workloadutil.SelectorString(obj.(*appsv1.ReplicaSet).Spec.Selector)
			},
		},
		Default: func(obj runtime.Object) {
			spec := &obj.(*appsv1.ReplicaSet).Spec
			if spec.Replicas == nil {
				one := int32(1)
				spec.Replicas = &one
			}
			podspec.DefaultPodTemplateSpec(&spec.Template)
		},
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{}
		},
		Validate: validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			rs, oldRS := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
			return apivalidation.ValidateImmutableField(rs.Spec.Selector, oldRS.Spec.Selector, field.NewPath("spec", "selector"))
		},
		Columns: columns(),
		Row:     row,
	}
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*appsv1.ReplicaSet).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Replicas != nil {
		errs = append(errs, workloadutil.NonNegative(int64(*spec.Replicas), p.Child("replicas"))...)
	}
	errs = append(errs, workloadutil.NonNegative(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	sel, selErrs := workloadutil.ValidateSelector(spec.Selector, "replicaset", p.Child("selector"))
	errs = append(errs, selErrs...)
	tp := p.Child("template")
	errs = append(errs, workloadutil.ValidateTemplateLabels(sel, &spec.Template, tp)...)
	errs = append(errs, podspec.ValidatePodTemplateSpec(&spec.Template, tp)...)
	return append(errs, workloadutil.ValidateRestartAlways(&spec.Template, "ReplicaSet", tp)...)
}

func columns() []metav1.TableColumnDefinition {
	status := appsv1.ReplicaSetStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Desired", Type: "integer", Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: status["replicas"]},
		{Name: "Ready", Type: "integer", Description: status["readyReplicas"]},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]},
	}
}

func row(obj runtime.Object, now time.Time) []interface{} {
	rs := obj.(*appsv1.ReplicaSet)
	names, images := workloadutil.ContainerCells(rs.Spec.Template.Spec.Containers)
	return []interface{}{
		rs.Name, int64(replicas(rs)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas), registry.Age(rs.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
	}
}
