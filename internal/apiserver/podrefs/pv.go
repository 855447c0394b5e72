package podrefs

import corev1 "k8s.io/api/core/v1"

// PVVisit is called with each secret a persistent volume names. kubelet
// says whether the kubelet reads it (node stage/publish/expand secrets,
// in-tree plugins) rather than a controller (CSI controller secrets).
type PVVisit func(namespace, name string, kubelet bool) bool

// PVSecrets visits every secret pv names. A secret reference without a
// namespace is in the namespace of the claim pv is bound to, as upstream
// resolves it for volumes persisted before secret namespaces existed.
func PVSecrets(pv *corev1.PersistentVolume, visit PVVisit) bool {
	claimNS := ""
	if pv.Spec.ClaimRef != nil {
		claimNS = pv.Spec.ClaimRef.Namespace
	}
	// or returns ns, or the claim's namespace when ns is empty.
	or := func(ns string) string {
		if ns != "" {
			return ns
		}
		return claimNS
	}
	v := func(ns, name string, kubelet bool) bool { return name == "" || visit(ns, name, kubelet) }
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.AzureFile != nil:
		ns := claimNS
		if s.AzureFile.SecretNamespace != nil && *s.AzureFile.SecretNamespace != "" {
			ns = *s.AzureFile.SecretNamespace
		}
		return v(ns, s.AzureFile.SecretName, true)
	case s.CephFS != nil && s.CephFS.SecretRef != nil:
		return v(or(s.CephFS.SecretRef.Namespace), s.CephFS.SecretRef.Name, true)
	case s.Cinder != nil && s.Cinder.SecretRef != nil:
		return v(s.Cinder.SecretRef.Namespace, s.Cinder.SecretRef.Name, true)
	case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
		return v(or(s.FlexVolume.SecretRef.Namespace), s.FlexVolume.SecretRef.Name, true)
	case s.RBD != nil && s.RBD.SecretRef != nil:
		return v(or(s.RBD.SecretRef.Namespace), s.RBD.SecretRef.Name, true)
	case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
		return v(or(s.ScaleIO.SecretRef.Namespace), s.ScaleIO.SecretRef.Name, true)
	case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
		return v(or(s.ISCSI.SecretRef.Namespace), s.ISCSI.SecretRef.Name, true)
	case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
		return v(s.StorageOS.SecretRef.Namespace, s.StorageOS.SecretRef.Name, true)
	case s.CSI != nil:
		for _, ref := range []struct {
			r       *corev1.SecretReference
			kubelet bool
		}{
			{s.CSI.ControllerPublishSecretRef, false},
			{s.CSI.ControllerExpandSecretRef, false},
			{s.CSI.NodePublishSecretRef, true},
			{s.CSI.NodeStageSecretRef, true},
			{s.CSI.NodeExpandSecretRef, true},
		} {
			if ref.r != nil && !v(ref.r.Namespace, ref.r.Name, ref.kubelet) {
				return false
			}
		}
	}
	return true
}
