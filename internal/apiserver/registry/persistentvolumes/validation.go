package persistentvolumes

import (
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/podspec"
)

var (
	supportedAccessModes = []string{string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOnce), string(corev1.ReadWriteOncePod)}
	supportedReclaim     = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRecycle), string(corev1.PersistentVolumeReclaimRetain)}
	supportedVolumeModes = []string{string(corev1.PersistentVolumeBlock), string(corev1.PersistentVolumeFilesystem)}
)

func validate(pv *corev1.PersistentVolume) field.ErrorList {
	spec := &pv.Spec
	specPath := field.NewPath("spec")
	var errs field.ErrorList

	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(specPath.Child("accessModes"), ""))
	}
	for _, m := range spec.AccessModes {
		if !slices.Contains(supportedAccessModes, string(m)) {
			errs = append(errs, field.NotSupported(specPath.Child("accessModes"), m, supportedAccessModes))
		}
	}
	if slices.Contains(spec.AccessModes, corev1.ReadWriteOncePod) && len(spec.AccessModes) > 1 {
		errs = append(errs, field.Forbidden(specPath.Child("accessModes"), "may not use ReadWriteOncePod with other access modes"))
	}

	capPath := specPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(capPath, ""))
	}
	for name, q := range spec.Capacity {
		if name != corev1.ResourceStorage {
			errs = append(errs, field.NotSupported(capPath, name, []string{string(corev1.ResourceStorage)}))
			continue
		}
		if q.Sign() <= 0 {
			errs = append(errs, field.Invalid(capPath.Key(string(name)), q.String(), "must be greater than zero"))
		}
	}
	if r := spec.PersistentVolumeReclaimPolicy; r != "" && !slices.Contains(supportedReclaim, string(r)) {
		errs = append(errs, field.NotSupported(specPath.Child("persistentVolumeReclaimPolicy"), r, supportedReclaim))
	}
	if m := spec.VolumeMode; m != nil && !slices.Contains(supportedVolumeModes, string(*m)) {
		errs = append(errs, field.NotSupported(specPath.Child("volumeMode"), *m, supportedVolumeModes))
	}
	if spec.StorageClassName != "" {
		for _, msg := range content.IsDNS1123Subdomain(spec.StorageClassName) {
			errs = append(errs, field.Invalid(specPath.Child("storageClassName"), spec.StorageClassName, msg))
		}
	}
	if spec.ClaimRef != nil && spec.ClaimRef.Name == "" {
		errs = append(errs, field.Required(specPath.Child("claimRef", "name"), ""))
	}
	if a := spec.NodeAffinity; a != nil {
		if a.Required == nil {
			errs = append(errs, field.Required(specPath.Child("nodeAffinity", "required"), "must specify required node constraints"))
		} else {
			errs = append(errs, podspec.ValidateNodeSelector(a.Required, specPath.Child("nodeAffinity", "required"))...)
		}
	}
	errs = append(errs, validateSource(spec, specPath)...)
	return errs
}

// validateSource checks that exactly one volume source is set and that the
// sources orch users meet (hostPath, local, nfs, csi) are complete.
func validateSource(spec *corev1.PersistentVolumeSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sourceNames(&spec.PersistentVolumeSource)
	if len(names) == 0 {
		return field.ErrorList{field.Required(specPath, "must specify a volume type")}
	}
	for _, extra := range names[1:] {
		errs = append(errs, field.Forbidden(specPath.Child(extra), "may not specify more than 1 volume type"))
	}
	if len(errs) > 0 {
		return errs
	}
	src := &spec.PersistentVolumeSource
	switch {
	case src.HostPath != nil:
		if src.HostPath.Path == "" {
			errs = append(errs, field.Required(specPath.Child("hostPath", "path"), ""))
		} else if slices.Contains(strings.Split(src.HostPath.Path, "/"), "..") {
			errs = append(errs, field.Invalid(specPath.Child("hostPath", "path"), src.HostPath.Path, "must not contain '..'"))
		}
	case src.Local != nil:
		p := specPath.Child("local", "path")
		switch {
		case src.Local.Path == "":
			errs = append(errs, field.Required(p, ""))
		case !path.IsAbs(src.Local.Path):
			errs = append(errs, field.Invalid(p, src.Local.Path, "must be an absolute path"))
		case slices.Contains(strings.Split(src.Local.Path, "/"), ".."):
			errs = append(errs, field.Invalid(p, src.Local.Path, "must not contain '..'"))
		}
		if spec.NodeAffinity == nil {
			errs = append(errs, field.Required(specPath.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	case src.NFS != nil:
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(specPath.Child("nfs", "server"), ""))
		}
		if src.NFS.Path == "" {
			errs = append(errs, field.Required(specPath.Child("nfs", "path"), ""))
		} else if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(specPath.Child("nfs", "path"), src.NFS.Path, "must be an absolute path"))
		}
	case src.CSI != nil:
		if src.CSI.Driver == "" {
			errs = append(errs, field.Required(specPath.Child("csi", "driver"), ""))
		}
		if src.CSI.VolumeHandle == "" {
			errs = append(errs, field.Required(specPath.Child("csi", "volumeHandle"), ""))
		}
	}
	return errs
}

func sourceNames(s *corev1.PersistentVolumeSource) []string {
	var names []string
	for _, c := range []struct {
		set  bool
		name string
	}{
		{s.GCEPersistentDisk != nil, "gcePersistentDisk"},
		{s.AWSElasticBlockStore != nil, "awsElasticBlockStore"},
		{s.HostPath != nil, "hostPath"},
		{s.Glusterfs != nil, "glusterfs"},
		{s.NFS != nil, "nfs"},
		{s.RBD != nil, "rbd"},
		{s.Quobyte != nil, "quobyte"},
		{s.CephFS != nil, "cephFS"},
		{s.ISCSI != nil, "iscsi"},
		{s.Cinder != nil, "cinder"},
		{s.FC != nil, "fc"},
		{s.Flocker != nil, "flocker"},
		{s.FlexVolume != nil, "flexVolume"},
		{s.AzureFile != nil, "azureFile"},
		{s.VsphereVolume != nil, "vsphereVolume"},
		{s.AzureDisk != nil, "azureDisk"},
		{s.PhotonPersistentDisk != nil, "photonPersistentDisk"},
		{s.PortworxVolume != nil, "portworxVolume"},
		{s.ScaleIO != nil, "scaleIO"},
		{s.Local != nil, "local"},
		{s.StorageOS != nil, "storageos"},
		{s.CSI != nil, "csi"},
	} {
		if c.set {
			names = append(names, c.name)
		}
	}
	return names
}

// validateUpdate keeps the volume source, the volume mode and a set node
// affinity fixed.
func validateUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
	}
	if !apiequality.Semantic.DeepEqual(pv.Spec.VolumeMode, old.Spec.VolumeMode) {
		errs = append(errs, field.Invalid(field.NewPath("volumeMode"), pv.Spec.VolumeMode, "field is immutable"))
	}
	if old.Spec.NodeAffinity != nil && !apiequality.Semantic.DeepEqual(pv.Spec.NodeAffinity, old.Spec.NodeAffinity) {
		errs = append(errs, field.Invalid(field.NewPath("nodeAffinity"), pv.Spec.NodeAffinity, "field is immutable"))
	}
	return errs
}
