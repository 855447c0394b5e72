package volumes

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/poddefaults"
)

// ErrMountFailed is wrapped by every *MountError.
var ErrMountFailed = errors.New("MountVolume.SetUp failed")

// MountError is why one volume of a pod is not ready. Its message is the
// one upstream's kubelet puts in a FailedMount event:
//
//	MountVolume.SetUp failed for volume "config" : configmaps "app" not found
//
// It wraps ErrMountFailed and the cause (podconfig.ErrUnsupported,
// podconfig.ErrInvalid, API errors, …).
type MountError struct {
	Volume string
	Err    error
}

func (e *MountError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *MountError) Unwrap() []error { return []error{ErrMountFailed, e.Err} }

// MountErrors are the *MountErrors in err (as Setup joins them), one per
// volume that is not ready, for one FailedMount event each.
func MountErrors(err error) []*MountError {
	var out []*MountError
	var walk func(error)
	walk = func(err error) {
		if me, ok := err.(*MountError); ok {
			out = append(out, me)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// sourceKind names the volume source orch does not implement, as the
// field is spelled in the API; "" when none is set.
func sourceKind(s *corev1.VolumeSource) string {
	if names := poddefaults.VolumeSourceNames(s); len(names) > 0 {
		return names[0]
	}
	return ""
}

// pvSourceKind is sourceKind for the sources of a PersistentVolume that
// orch does not implement.
func pvSourceKind(s *corev1.PersistentVolumeSource) string {
	switch {
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.NFS != nil:
		return "nfs"
	case s.ISCSI != nil:
		return "iscsi"
	case s.Glusterfs != nil:
		return "glusterfs"
	case s.RBD != nil:
		return "rbd"
	case s.FlexVolume != nil:
		return "flexVolume"
	case s.Cinder != nil:
		return "cinder"
	case s.CephFS != nil:
		return "cephfs"
	case s.Flocker != nil:
		return "flocker"
	case s.FC != nil:
		return "fc"
	case s.AzureFile != nil:
		return "azureFile"
	case s.VsphereVolume != nil:
		return "vsphereVolume"
	case s.Quobyte != nil:
		return "quobyte"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case s.PortworxVolume != nil:
		return "portworxVolume"
	case s.ScaleIO != nil:
		return "scaleIO"
	case s.StorageOS != nil:
		return "storageos"
	case s.CSI != nil:
		return "csi"
	}
	return "unknown"
}
