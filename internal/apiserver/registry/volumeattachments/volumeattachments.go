// Package volumeattachments is the registry entry for storage.k8s.io/v1
// volumeattachments.
package volumeattachments

import (
	"math"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/csinodes"
)

const (
	maxMetadataSize     = 256 * (1 << 10)
	maxErrorMessageSize = 1024
)

// Resource returns the volumeattachments entry.
func Resource() registry.Resource {
	return registry.Resource{
		GroupVersion: storagev1.SchemeGroupVersion,
		Resource:     "volumeattachments",
		Kind:         "VolumeAttachment",
		SingularName: "volumeattachment",
		New:          func() runtime.Object { return &storagev1.VolumeAttachment{} },
		NewList:      func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
		HasStatus:    true,
		StatusMeta:   registry.StatusKeepsMeta,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
		},
		Validate: validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			va, oldVA := obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment)
			if !apiequality.Semantic.DeepEqual(va.Spec, oldVA.Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), va.Spec, "field is immutable")}
			}
			return nil
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
			{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
			{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
			{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: func(obj runtime.Object, now time.Time) []interface{} {
			va := obj.(*storagev1.VolumeAttachment)
			pv := ""
			if va.Spec.Source.PersistentVolumeName != nil {
				pv = *va.Spec.Source.PersistentVolumeName
			}
			return []interface{}{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, registry.Age(va.CreationTimestamp, now)}
		},
	}
}

func validate(obj runtime.Object) field.ErrorList {
	va := obj.(*storagev1.VolumeAttachment)
	spec := field.NewPath("spec")
	errs := csinodes.ValidateDriverName(va.Spec.Attacher, spec.Child("attacher"))

	src := va.Spec.Source
	srcPath := spec.Child("source")
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil && *src.PersistentVolumeName == "":
		errs = append(errs, field.Required(srcPath.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		for _, msg := range apivalidation.NameIsDNSSubdomain(*src.PersistentVolumeName, false) {
			errs = append(errs, field.Invalid(srcPath.Child("persistentVolumeName"), *src.PersistentVolumeName, msg))
		}
	}

	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(spec.Child("nodeName"), va.Spec.NodeName, msg))
	}
	return append(errs, validateStatus(&va.Status, field.NewPath("status"))...)
}

func validateStatus(s *storagev1.VolumeAttachmentStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range s.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxMetadataSize {
		errs = append(errs, field.TooLong(p.Child("attachmentMetadata"), "", maxMetadataSize))
	}
	errs = append(errs, validateVolumeError(s.AttachError, p.Child("attachError"))...)
	return append(errs, validateVolumeError(s.DetachError, p.Child("detachError"))...)
}

func validateVolumeError(e *storagev1.VolumeError, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e == nil {
		return nil
	}
	if len(e.Message) > maxErrorMessageSize {
		errs = append(errs, field.TooLong(p.Child("message"), "", maxErrorMessageSize))
	}
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		errs = append(errs, field.Invalid(p.Child("errorCode"), *e.ErrorCode, validation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}
