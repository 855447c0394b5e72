package podrefs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// APIObjectReference reports whether pod's spec refers to an API object,
// and which: the plural resource upstream's HasAPIObjectReference names
// (e.g. "secrets (via projected volumes)"). err says a volume or projected
// source of no known type was found; NodeRestriction refuses such a pod.
func APIObjectReference(pod *corev1.Pod) (bool, string, error) {
	if pod.Spec.ServiceAccountName != "" {
		return true, "serviceaccounts", nil
	}
	if !Secrets(pod, func(string) bool { return false }) {
		return true, "secrets", nil
	}
	if !ConfigMaps(pod, func(string) bool { return false }) {
		return true, "configmaps", nil
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return true, "resourceclaims", nil
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil,
			v.GCEPersistentDisk != nil, v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil,
			v.NFS != nil, v.PhotonPersistentDisk != nil, v.PortworxVolume != nil, v.Quobyte != nil,
			v.RBD != nil, v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
			continue
		case v.ConfigMap != nil:
			return true, "configmaps (via configmap volumes)", nil
		case v.Secret != nil:
			return true, "secrets (via secret volumes)", nil
		case v.CSI != nil:
			return true, "csidrivers (via CSI volumes)", nil
		case v.Glusterfs != nil:
			return true, "endpoints (via glusterFS volumes)", nil
		case v.PersistentVolumeClaim != nil:
			return true, "persistentvolumeclaims", nil
		case v.Ephemeral != nil:
			return true, "persistentvolumeclaims (via ephemeral volumes)", nil
		case v.AzureFile != nil:
			return true, "secrets (via azureFile volumes)", nil
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return true, "configmaps (via projected volumes)", nil
				case s.Secret != nil:
					return true, "secrets (via projected volumes)", nil
				case s.ServiceAccountToken != nil:
					return true, "serviceaccounts (via projected volumes)", nil
				case s.ClusterTrustBundle != nil:
					return true, "clustertrustbundles", nil
				case s.PodCertificate != nil:
					return true, "podcertificates", nil
				case s.DownwardAPI != nil:
					continue
				default:
					return true, "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			return true, "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
		}
	}
	return false, "", nil
}
