// Package deployments is the registry entry for apps/v1 deployments.
package deployments

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

// Resource returns the deployments entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: appsv1.SchemeGroupVersion,
		Resource:     "deployments",
		Kind:         "Deployment",
		SingularName: "deployment",
		Namespaced:   true,
		ShortNames:   []string{"deploy"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &appsv1.Deployment{} },
		NewList:      func() runtime.Object { return &appsv1.DeploymentList{} },
		HasStatus:    true,
		StatusMeta:   registry.StatusKeepsLabels,
		Scale: &registry.ScaleAccessor{
			SpecReplicas: func(obj runtime.Object) int32 { return replicas(obj.(*appsv1.Deployment)) },
			SetSpecReplicas: func(obj runtime.Object, n int32) {
				obj.(*appsv1.Deployment).Spec.Replicas = &n
			},
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.Deployment).Status.Replicas },
			Selector: func(obj runtime.Object) string {
				return workloadutil.SelectorString(obj.(*appsv1.Deployment).Spec.Selector)
			},
		},
		Default: setDefaults,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{}
		},
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Columns:        columns(),
		Row:            row,
	}
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// setDefaults applies upstream's apps/v1 defaults: one replica, a rolling
// update of 25% surge and 25% unavailable, 10 old replica sets kept and a
// progress deadline of 600 seconds.
func setDefaults(obj runtime.Object) {
	spec := &obj.(*appsv1.Deployment).Spec
	if spec.Replicas == nil {
		one := int32(1)
		spec.Replicas = &one
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := spec.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			ru.MaxUnavailable = &v
		}
		if ru.MaxSurge == nil {
			v := intstr.FromString("25%")
			ru.MaxSurge = &v
		}
	}
	if spec.RevisionHistoryLimit == nil {
		ten := int32(10)
		spec.RevisionHistoryLimit = &ten
	}
	if spec.ProgressDeadlineSeconds == nil {
		deadline := int32(600)
		spec.ProgressDeadlineSeconds = &deadline
	}
	podspec.DefaultPodTemplateSpec(&spec.Template)
}

func columns() []metav1.TableColumnDefinition {
	status := appsv1.DeploymentStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		{Name: "Up-to-date", Type: "string", Description: status["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: status["availableReplicas"]},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]},
	}
}

func row(obj runtime.Object, now time.Time) []interface{} {
	d := obj.(*appsv1.Deployment)
	names, images := workloadutil.ContainerCells(d.Spec.Template.Spec.Containers)
	return []interface{}{
		d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d)),
		int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), registry.Age(d.CreationTimestamp, now),
		names, images, workloadutil.SelectorString(d.Spec.Selector),
	}
}
