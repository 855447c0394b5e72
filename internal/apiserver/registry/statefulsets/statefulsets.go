// Package statefulsets is the registry entry for apps/v1 statefulsets.
package statefulsets

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
	"orch/internal/apiserver/registry/workloadutil"
)

// Resource returns the statefulsets entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:   appsv1.SchemeGroupVersion,
		Resource:       "statefulsets",
		Kind:           "StatefulSet",
		SingularName:   "statefulset",
		Namespaced:     true,
		ShortNames:     []string{"sts"},
		Categories:     []string{"all"},
		New:            func() runtime.Object { return &appsv1.StatefulSet{} },
		NewList:        func() runtime.Object { return &appsv1.StatefulSetList{} },
		NameValidation: registry.NameLabel, // pod names and hostnames are built from it
		HasStatus:      true,
		Scale: &registry.ScaleAccessor{
			SpecReplicas: func(obj runtime.Object) int32 { return replicas(obj.(*appsv1.StatefulSet)) },
			SetSpecReplicas: func(obj runtime.Object, n int32) {
				obj.(*appsv1.StatefulSet).Spec.Replicas = &n
			},
			StatusReplicas: func(obj runtime.Object) int32 { return obj.(*appsv1.StatefulSet).Status.Replicas },
			Selector: func(obj runtime.Object) string {
				return workloadutil.SelectorString(obj.(*appsv1.StatefulSet).Spec.Selector)
			},
		},
		Default: setDefaults,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*appsv1.StatefulSet).Status = appsv1.StatefulSetStatus{}
		},
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
			{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			s := obj.(*appsv1.StatefulSet)
			names, images := workloadutil.ContainerCells(s.Spec.Template.Spec.Containers)
			return []interface{}{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s)), registry.Age(s.CreationTimestamp, now), names, images}
		},
	}
}

func replicas(s *appsv1.StatefulSet) int32 {
	if s.Spec.Replicas == nil {
		return 1
	}
	return *s.Spec.Replicas
}

// setDefaults applies upstream's apps/v1 defaults, including those of the
// volume claim templates.
func setDefaults(obj runtime.Object) {
	spec := &obj.(*appsv1.StatefulSet).Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	// As upstream, the rolling update parameters are filled in only when the
	// strategy type itself was left out.
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition == nil {
		zero := int32(0)
		ru.Partition = &zero
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.Replicas == nil {
		one := int32(1)
		spec.Replicas = &one
	}
	if spec.RevisionHistoryLimit == nil {
		ten := int32(10)
		spec.RevisionHistoryLimit = &ten
	}
	for i := range spec.VolumeClaimTemplates {
		defaultClaimTemplate(&spec.VolumeClaimTemplates[i])
	}
	podspec.DefaultPodTemplateSpec(&spec.Template)
}

// defaultClaimTemplate gives a claim template what upstream shows on it: its
// type, a Filesystem volume mode and a Pending phase.
func defaultClaimTemplate(c *corev1.PersistentVolumeClaim) {
	if c.APIVersion == "" {
		c.APIVersion = "v1"
	}
	if c.Kind == "" {
		c.Kind = "PersistentVolumeClaim"
	}
	if c.Spec.VolumeMode == nil {
		mode := corev1.PersistentVolumeFilesystem
		c.Spec.VolumeMode = &mode
	}
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
}
