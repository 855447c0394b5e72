// Package replicationcontrollers is the registry entry for core/v1
// replicationcontrollers, with the scale subresource.
package replicationcontrollers

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/podtemplates"
)

// Resource returns the replicationcontrollers entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "replicationcontrollers",
		Kind:         "ReplicationController",
		SingularName: "replicationcontroller",
		Namespaced:   true,
		ShortNames:   []string{"rc"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &corev1.ReplicationController{} },
		NewList:      func() runtime.Object { return &corev1.ReplicationControllerList{} },
		HasStatus:    true,
		Scale:        scale,
		Default:      func(obj runtime.Object) { Default(obj.(*corev1.ReplicationController)) },
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*corev1.ReplicationController).Status = corev1.ReplicationControllerStatus{}
		},
		Validate: func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.ReplicationController)) },
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Desired", Type: "integer", Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]},
			{Name: "Current", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]},
			{Name: "Ready", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
			{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
			{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			return row(obj.(*corev1.ReplicationController), now)
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
		},
	}
}

var scale = &registry.ScaleAccessor{
	SpecReplicas: func(obj runtime.Object) int32 { return specReplicas(obj.(*corev1.ReplicationController)) },
	SetSpecReplicas: func(obj runtime.Object, replicas int32) {
		obj.(*corev1.ReplicationController).Spec.Replicas = &replicas
	},
	StatusReplicas: func(obj runtime.Object) int32 { return obj.(*corev1.ReplicationController).Status.Replicas },
	Selector: func(obj runtime.Object) string {
		return labels.SelectorFromSet(obj.(*corev1.ReplicationController).Spec.Selector).String()
	},
}

func specReplicas(rc *corev1.ReplicationController) int32 {
	if rc.Spec.Replicas == nil {
		return 1
	}
	return *rc.Spec.Replicas
}

// Default sets replicas to 1, takes the selector and the labels from the
// template's labels when they are empty, and defaults the template.
func Default(rc *corev1.ReplicationController) {
	if rc.Spec.Replicas == nil {
		one := int32(1)
		rc.Spec.Replicas = &one
	}
	if t := rc.Spec.Template; t != nil {
		if t.Labels != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = copyMap(t.Labels)
			}
			if len(rc.Labels) == 0 {
				rc.Labels = copyMap(t.Labels)
			}
		}
		podspec.DefaultPodTemplateSpec(t)
	}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func validate(rc *corev1.ReplicationController) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(specReplicas(rc)), specPath.Child("replicas"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(rc.Spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if len(rc.Spec.Selector) == 0 {
		errs = append(errs, field.Required(specPath.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabels(rc.Spec.Selector, specPath.Child("selector"))...)
	}
	tmplPath := specPath.Child("template")
	t := rc.Spec.Template
	if t == nil {
		return append(errs, field.Required(tmplPath, ""))
	}
	if sel := labels.SelectorFromSet(rc.Spec.Selector); !sel.Empty() && !sel.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(tmplPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, podspec.ValidatePodTemplateSpec(t, tmplPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tmplPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tmplPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
	}
	return errs
}

func row(rc *corev1.ReplicationController, now time.Time) []interface{} {
	var containers []corev1.Container
	if rc.Spec.Template != nil {
		containers = rc.Spec.Template.Spec.Containers
	}
	names, images := podtemplates.ContainerCells(containers)
	return []interface{}{
		rc.Name, int64(specReplicas(rc)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
		registry.Age(rc.CreationTimestamp, now), names, images, labels.FormatLabels(rc.Spec.Selector),
	}
}
