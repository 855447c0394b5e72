// Package persistentvolumeclaims is the registry entry for core/v1
// persistentvolumeclaims.
//
// A claim's spec is fixed once created, except that the binder sets
// volumeName once, a bound claim may ask for more storage, and the volume
// attributes class may change.
package persistentvolumeclaims

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/persistentvolumes"
	"orch/internal/apiserver/registry/podspec"
)

const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// Resource returns the persistentvolumeclaims entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "persistentvolumeclaims",
		Kind:         "PersistentVolumeClaim",
		SingularName: "persistentvolumeclaim",
		Namespaced:   true,
		ShortNames:   []string{"pvc"},
		New:          func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList:      func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		HasStatus:    true,
		Default:      func(obj runtime.Object) { Default(obj.(*corev1.PersistentVolumeClaim)) },
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*corev1.PersistentVolumeClaim).Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return podspec.ValidatePersistentVolumeClaimSpec(&obj.(*corev1.PersistentVolumeClaim).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
			{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
			{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
			{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
			{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
			{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			return row(obj.(*corev1.PersistentVolumeClaim), now)
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"name": obj.(*corev1.PersistentVolumeClaim).Name}
		},
	}
}

// Default sets volumeMode Filesystem and phase Pending, and rounds the
// resource lists.
func Default(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	if pvc.Spec.VolumeMode == nil {
		fs := corev1.PersistentVolumeFilesystem
		pvc.Spec.VolumeMode = &fs
	}
	podspec.RoundResourceList(pvc.Spec.Resources.Limits)
	podspec.RoundResourceList(pvc.Spec.Resources.Requests)
	podspec.RoundResourceList(pvc.Status.Capacity)
	podspec.RoundResourceList(pvc.Status.AllocatedResources)
}

func validateUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	// Compare the specs without what may change.
	newSpec, oldSpec := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName // the binder sets it once
	}
	oldSpec.VolumeAttributesClassName = newSpec.VolumeAttributesClassName
	// A claim without a class may get one once (the binder gives it the
	// default class retroactively), or the class its beta annotation names.
	if oldAnn, had := old.Annotations[betaStorageClassAnnotation]; oldSpec.StorageClassName == nil && newSpec.StorageClassName != nil &&
		(!had || *newSpec.StorageClassName == oldAnn) {
		oldSpec.StorageClassName = newSpec.StorageClassName
	}
	if pvc.Status.Phase == corev1.ClaimBound && newSpec.Resources.Requests != nil {
		if size, ok := oldSpec.Resources.Requests[corev1.ResourceStorage]; ok {
			newSpec.Resources.Requests[corev1.ResourceStorage] = size
		}
	}
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	newSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := old.Spec.Resources.Requests[corev1.ResourceStorage]
	statusSize := old.Status.Capacity[corev1.ResourceStorage]
	// A claim may shrink back to what the volume has, to recover from a
	// failed expansion, but never below it.
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(statusSize) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	if old.Annotations[betaStorageClassAnnotation] != pvc.Annotations[betaStorageClassAnnotation] {
		if _, had := old.Annotations[betaStorageClassAnnotation]; had {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(betaStorageClassAnnotation), "field is immutable"))
		}
	}
	return errs
}

func row(pvc *corev1.PersistentVolumeClaim, now time.Time) []interface{} {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, accessModes := "", ""
	if pvc.Spec.VolumeName != "" {
		accessModes = persistentvolumes.AccessModesString(pvc.Status.AccessModes)
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
	}
	class := ""
	if c, ok := pvc.Annotations[betaStorageClassAnnotation]; ok {
		class = c
	} else if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	vac := "<unset>"
	if pvc.Spec.VolumeAttributesClassName != nil {
		vac = *pvc.Spec.VolumeAttributesClassName
	}
	volumeMode := "<unset>"
	if pvc.Spec.VolumeMode != nil {
		volumeMode = string(*pvc.Spec.VolumeMode)
	}
	return []interface{}{
		pvc.Name, phase, pvc.Spec.VolumeName, capacity, accessModes, class, vac,
		registry.Age(pvc.CreationTimestamp, now), volumeMode,
	}
}
