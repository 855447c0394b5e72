package volumes

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"

	"orch/internal/kubelet/podconfig"
	"orch/internal/localpath"
	"orch/internal/volumeprotection"
)

// ephemeralClaim resolves a generic ephemeral volume to the claim the
// ephemeral volume controller made for the pod (POD-VOLUME); a claim of
// that name that is not the pod's is refused, as upstream's kubelet does.
func (s *setup) ephemeralClaim(v *corev1.Volume) (podconfig.Volume, error) {
	src := &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ephemeral.VolumeClaimName(s.pod, v)}
	return s.claim(v.Name, src, func(pvc *corev1.PersistentVolumeClaim) error { return ephemeral.VolumeIsForPod(s.pod, pvc) })
}

// claim resolves a persistentVolumeClaim volume to its bound
// PersistentVolume's path: hostPath (type checked as for a hostPath
// volume) and local volumes; other sources are not supported. A local
// volume of orch's local-path provisioner gets its directory made on first
// use, held to the volume's capacity where its filesystem enforces
// project quotas (localpath.Ensure). check (nil: none) vets the claim first. Once resolved, the claim
// is not looked up again for the pod.
func (s *setup) claim(name string, src *corev1.PersistentVolumeClaimVolumeSource, check func(*corev1.PersistentVolumeClaim) error) (podconfig.Volume, error) {
	if v, ok := s.ps.claims[name]; ok {
		return v, nil
	}
	ns := s.pod.Namespace
	wrap := func(err error) error {
		return fmt.Errorf("error processing PVC %s/%s: %w", ns, src.ClaimName, err)
	}
	pvc, err := s.m.client.CoreV1().PersistentVolumeClaims(ns).Get(s.ctx, src.ClaimName, metav1.GetOptions{})
	if err != nil {
		return podconfig.Volume{}, wrap(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	}
	if check != nil {
		if err := check(pvc); err != nil {
			return podconfig.Volume{}, err
		}
	}
	switch {
	case pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, volumeprotection.ClaimFinalizer):
		return podconfig.Volume{}, wrap(errors.New("PVC is being deleted"))
	case pvc.Status.Phase != corev1.ClaimBound:
		return podconfig.Volume{}, wrap(errors.New("PVC is not bound"))
	case pvc.Spec.VolumeName == "":
		return podconfig.Volume{}, wrap(errors.New("PVC has empty pvc.Spec.VolumeName"))
	}
	pv, err := s.m.client.CoreV1().PersistentVolumes().Get(s.ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return podconfig.Volume{}, wrap(fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err))
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		return podconfig.Volume{}, wrap(fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name))
	case pv.Spec.ClaimRef.UID != pvc.UID:
		return podconfig.Volume{}, wrap(fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pv.Name, pv.Spec.ClaimRef.UID, pvc.UID))
	}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return podconfig.Volume{}, fmt.Errorf("volume %s has volumeMode %s: block volumes are %w", name, *pv.Spec.VolumeMode, podconfig.ErrUnsupported)
	}
	v := podconfig.Volume{ReadOnly: src.ReadOnly}
	switch {
	case pv.Spec.HostPath != nil:
		if err := checkHostPath(pv.Spec.HostPath.Path, pv.Spec.HostPath.Type); err != nil {
			return podconfig.Volume{}, err
		}
		v.HostPath = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path := pv.Spec.Local.Path
		if pv.Annotations[volume.AnnDynamicallyProvisioned] == localpath.Provisioner {
			if err := localpath.Ensure(pv); err != nil {
				return podconfig.Volume{}, err
			}
		}
		if _, err := fileType(path); err != nil {
			return podconfig.Volume{}, fmt.Errorf("local volume %s: %w", pv.Name, err)
		}
		if !src.ReadOnly {
			changeOwnershipPolicy(s.log, path, fsGroup(s.pod), false, fsGroupChangePolicy(s.pod))
		}
		v.HostPath = path
	default:
		return podconfig.Volume{}, fmt.Errorf("persistent volume %s: %s volumes are %w", pv.Name, pvSourceKind(&pv.Spec.PersistentVolumeSource), podconfig.ErrUnsupported)
	}
	s.ps.claims[name] = v
	return v, nil
}
