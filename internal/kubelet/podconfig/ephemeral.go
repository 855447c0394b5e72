package podconfig

import corev1 "k8s.io/api/core/v1"

// AsContainer is the ephemeral container ec as a Container: the two share
// their fields (EphemeralContainerCommon), so the result aliases ec. Names,
// hashes, labels, logs and statuses of ephemeral containers are those of
// this Container, as in upstream's kubelet.
func AsContainer(ec *corev1.EphemeralContainer) *corev1.Container {
	return (*corev1.Container)(&ec.EphemeralContainerCommon)
}
