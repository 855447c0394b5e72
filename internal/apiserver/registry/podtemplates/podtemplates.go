// Package podtemplates is the registry entry for core/v1 podtemplates.
package podtemplates

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
)

// Resource returns the podtemplates entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "podtemplates",
		Kind:         "PodTemplate",
		SingularName: "podtemplate",
		Namespaced:   true,
		New:          func() runtime.Object { return &corev1.PodTemplate{} },
		NewList:      func() runtime.Object { return &corev1.PodTemplateList{} },
		Default:      func(obj runtime.Object) { podspec.DefaultPodTemplateSpec(&obj.(*corev1.PodTemplate).Template) },
		Validate: func(obj runtime.Object) field.ErrorList {
			return podspec.ValidatePodTemplateSpec(&obj.(*corev1.PodTemplate).Template, field.NewPath("template"))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Containers", Type: "string", Description: "Names of each container in the template."},
			{Name: "Images", Type: "string", Description: "Images referenced by each container in the template."},
			{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
		},
		Row: func(obj runtime.Object, _ time.Time) []interface{} {
			pt := obj.(*corev1.PodTemplate)
			names, images := ContainerCells(pt.Template.Spec.Containers)
			return []interface{}{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}
		},
	}
}

// ContainerCells joins container names and images with commas, for the
// Containers and Images columns of workload tables.
func ContainerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}
