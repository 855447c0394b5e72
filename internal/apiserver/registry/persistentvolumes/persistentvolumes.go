// Package persistentvolumes is the registry entry for core/v1
// persistentvolumes.
package persistentvolumes

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/podspec"
	"orch/internal/poddefaults"
)

// betaStorageClassAnnotation is the storage class annotation that predates
// spec.storageClassName and still wins over it.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// now is the clock for status.lastPhaseTransitionTime; tests replace it.
var now = metav1.Now

// Resource returns the persistentvolumes entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion:     corev1.SchemeGroupVersion,
		Resource:         "persistentvolumes",
		Kind:             "PersistentVolume",
		SingularName:     "persistentvolume",
		Namespaced:       false,
		ShortNames:       []string{"pv"},
		New:              func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList:          func() runtime.Object { return &corev1.PersistentVolumeList{} },
		HasStatus:        true,
		Default:          func(obj runtime.Object) { Default(obj.(*corev1.PersistentVolume)) },
		PrepareForCreate: func(obj runtime.Object) { prepareForCreate(obj.(*corev1.PersistentVolume)) },
		Validate:         func(obj runtime.Object) field.ErrorList { return validate(obj.(*corev1.PersistentVolume)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume))
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]},
			{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]},
			{Name: "Reclaim Policy", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]},
			{Name: "Status", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]},
			{Name: "Claim", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]},
			{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
			{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
			{Name: "Reason", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} { return row(obj.(*corev1.PersistentVolume), now) },
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"name": obj.(*corev1.PersistentVolume).Name}
		},
	}
}

// Default applies upstream defaults: reclaim policy Retain, volume mode
// Filesystem, phase Pending, and the defaults of the volume source.
func Default(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		fs := corev1.PersistentVolumeFilesystem
		pv.Spec.VolumeMode = &fs
	}
	podspec.RoundResourceList(pv.Spec.Capacity)
	src := &pv.Spec.PersistentVolumeSource
	if src.HostPath != nil && src.HostPath.Type == nil {
		unset := corev1.HostPathUnset
		src.HostPath.Type = &unset
	}
	if src.RBD != nil {
		setIfEmpty(&src.RBD.RBDPool, "rbd")
		setIfEmpty(&src.RBD.RadosUser, "admin")
		setIfEmpty(&src.RBD.Keyring, "/etc/ceph/keyring")
	}
	if src.ISCSI != nil {
		setIfEmpty(&src.ISCSI.ISCSIInterface, "default")
	}
	if src.AzureDisk != nil {
		poddefaults.AzureDisk(src.AzureDisk)
	}
	if src.ScaleIO != nil {
		setIfEmpty(&src.ScaleIO.StorageMode, "ThinProvisioned")
		setIfEmpty(&src.ScaleIO.FSType, "xfs")
	}
}

func setIfEmpty(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func prepareForCreate(pv *corev1.PersistentVolume) {
	t := now()
	pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &t}
}

func row(pv *corev1.PersistentVolume, now time.Time) []interface{} {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	volumeMode := "<unset>"
	if pv.Spec.VolumeMode != nil {
		volumeMode = string(*pv.Spec.VolumeMode)
	}
	vac := "<unset>"
	if pv.Spec.VolumeAttributesClassName != nil {
		vac = *pv.Spec.VolumeAttributesClassName
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	class := pv.Spec.StorageClassName
	if c, ok := pv.Annotations[betaStorageClassAnnotation]; ok {
		class = c
	}
	return []interface{}{
		pv.Name, capacity.String(), AccessModesString(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase, claim, class, vac, pv.Status.Reason, registry.Age(pv.CreationTimestamp, now), volumeMode,
	}
}

// AccessModesString abbreviates access modes the way kubectl shows them
// ("RWO,ROX,RWX,RWOP"), in that fixed order.
func AccessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	has := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}
