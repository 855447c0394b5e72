// Package volumeprotection holds what upstream's storage object in use
// protection decides, shared by the apiserver's StorageObjectInUseProtection
// admission (which puts the finalizers on new claims and volumes), the
// pvc-protection and pv-protection controllers (which take them off when
// nothing uses the object any more) and the kubelet (which starts no pod on
// a claim being deleted).
package volumeprotection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// The finalizers, by upstream's names.
const (
	// ClaimFinalizer keeps a PersistentVolumeClaim a scheduled pod uses.
	ClaimFinalizer = "kubernetes.io/pvc-protection"
	// VolumeFinalizer keeps a PersistentVolume bound to a claim.
	VolumeFinalizer = "kubernetes.io/pv-protection"
)

// NeedsFinalizer is true for an object that is not being deleted and lacks
// finalizer: the controllers add it to objects created before the
// admission plugin was on.
func NeedsFinalizer(m metav1.Object, finalizer string) bool {
	return m.GetDeletionTimestamp() == nil && !slices.Contains(m.GetFinalizers(), finalizer)
}

// DeletionCandidate is true for an object being deleted that still has
// finalizer: the controllers remove it once the object is unused.
func DeletionCandidate(m metav1.Object, finalizer string) bool {
	return m.GetDeletionTimestamp() != nil && slices.Contains(m.GetFinalizers(), finalizer)
}

// SetFinalizer puts finalizer on m (once) when on, or takes it off.
func SetFinalizer(m metav1.Object, finalizer string, on bool) {
	rest := slices.DeleteFunc(slices.Clone(m.GetFinalizers()), func(f string) bool { return f == finalizer })
	if on {
		rest = append(rest, finalizer)
	}
	m.SetFinalizers(rest)
}

// PodUsesClaim is upstream's rule for whether pod keeps claim: only a
// scheduled pod does (the kubelet will not start one on a claim being
// deleted), through a persistentVolumeClaim volume for as long as the pod
// exists, or through a generic ephemeral volume made for it until the pod
// is shut down.
func PodUsesClaim(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	if pod.Namespace != claim.Namespace || pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name:
			return true
		case v.Ephemeral != nil && !podShutDown(pod) && ephemeral.VolumeClaimName(pod, v) == claim.Name &&
			ephemeral.VolumeIsForPod(pod, claim) == nil:
			return true
		}
	}
	return false
}

// ClaimNames are the claims pod's volumes name (persistentVolumeClaim and
// generic ephemeral volumes).
func ClaimNames(pod *corev1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, ephemeral.VolumeClaimName(pod, v))
		}
	}
	return out
}

// podShutDown is true for a pod the kubelet is done with (deleted with a
// grace period of 0, as the kubelet finishes a pod) or that was force
// deleted: it no longer holds its ephemeral claims, which also breaks a
// cycle of a pod finalizer waiting for the claim.
func podShutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// VolumeInUse is upstream's rule for a PersistentVolume: it is in use
// while bound to a claim.
func VolumeInUse(pv *corev1.PersistentVolume) bool {
	return pv.Status.Phase == corev1.VolumeBound
}
