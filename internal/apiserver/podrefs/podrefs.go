// Package podrefs says which API objects a pod or a persistent volume names:
// the secrets, config maps and claims a pod's spec refers to, the secrets a
// persistent volume refers to, and whether a pod refers to any API object at
// all. It is upstream's VisitPodSecretNames, VisitPodConfigmapNames,
// VisitPVSecretNames and HasAPIObjectReference over the v1 types. The Node
// authorizer grants a kubelet what its pods name; NodeRestriction refuses a
// mirror pod that names anything.
package podrefs

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Visit is called with each name found; returning false stops the walk.
type Visit func(name string) bool

// skipEmpty drops empty names, as upstream's visitors do.
func skipEmpty(visit Visit) Visit {
	return func(name string) bool { return name == "" || visit(name) }
}

// containers calls f with every container of spec: init, regular and
// ephemeral, in that order, until f returns false.
func containers(spec *corev1.PodSpec, f func(c *corev1.Container) bool) bool {
	for i := range spec.InitContainers {
		if !f(&spec.InitContainers[i]) {
			return false
		}
	}
	for i := range spec.Containers {
		if !f(&spec.Containers[i]) {
			return false
		}
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		if !f(&c) {
			return false
		}
	}
	return true
}

// Secrets visits the name of every secret pod's spec names: image pull
// secrets, env and envFrom of every container, and the volumes that name
// one (secret, projected, CSI nodePublishSecretRef and the in-tree plugins
// with a secretRef). It reports whether the walk ran to the end.
func Secrets(pod *corev1.Pod, visit Visit) bool {
	visit = skipEmpty(visit)
	for _, ref := range pod.Spec.ImagePullSecrets {
		if !visit(ref.Name) {
			return false
		}
	}
	if !containers(&pod.Spec, func(c *corev1.Container) bool {
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil && !visit(from.SecretRef.Name) {
				return false
			}
		}
		for _, env := range c.Env {
			if env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil && !visit(env.ValueFrom.SecretKeyRef.Name) {
				return false
			}
		}
		return true
	}) {
		return false
	}
	for i := range pod.Spec.Volumes {
		if name, ok := volumeSecret(&pod.Spec.Volumes[i].VolumeSource); ok && !visit(name) {
			return false
		}
		if p := pod.Spec.Volumes[i].Projected; p != nil {
			for _, s := range p.Sources {
				if s.Secret != nil && !visit(s.Secret.Name) {
					return false
				}
			}
		}
	}
	return true
}

// volumeSecret is the secret a (non-projected) volume source names.
func volumeSecret(v *corev1.VolumeSource) (string, bool) {
	switch {
	case v.Secret != nil:
		return v.Secret.SecretName, true
	case v.AzureFile != nil:
		return v.AzureFile.SecretName, true
	case v.CephFS != nil && v.CephFS.SecretRef != nil:
		return v.CephFS.SecretRef.Name, true
	case v.Cinder != nil && v.Cinder.SecretRef != nil:
		return v.Cinder.SecretRef.Name, true
	case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
		return v.FlexVolume.SecretRef.Name, true
	case v.RBD != nil && v.RBD.SecretRef != nil:
		return v.RBD.SecretRef.Name, true
	case v.ScaleIO != nil && v.ScaleIO.SecretRef != nil:
		return v.ScaleIO.SecretRef.Name, true
	case v.ISCSI != nil && v.ISCSI.SecretRef != nil:
		return v.ISCSI.SecretRef.Name, true
	case v.StorageOS != nil && v.StorageOS.SecretRef != nil:
		return v.StorageOS.SecretRef.Name, true
	case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
		return v.CSI.NodePublishSecretRef.Name, true
	}
	return "", false
}

// ConfigMaps visits the name of every config map pod's spec names: env and
// envFrom of every container, configMap volumes and projected sources.
func ConfigMaps(pod *corev1.Pod, visit Visit) bool {
	visit = skipEmpty(visit)
	if !containers(&pod.Spec, func(c *corev1.Container) bool {
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil && !visit(from.ConfigMapRef.Name) {
				return false
			}
		}
		for _, env := range c.Env {
			if env.ValueFrom != nil && env.ValueFrom.ConfigMapKeyRef != nil && !visit(env.ValueFrom.ConfigMapKeyRef.Name) {
				return false
			}
		}
		return true
	}) {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			if !visit(v.ConfigMap.Name) {
				return false
			}
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil && !visit(s.ConfigMap.Name) {
					return false
				}
			}
		}
	}
	return true
}

// Claims visits the name of every persistent volume claim pod's volumes
// use: persistentVolumeClaim volumes and, for a generic ephemeral volume,
// the claim named POD-VOLUME that the ephemeral volume controller creates.
func Claims(pod *corev1.Pod, visit Visit) bool {
	visit = skipEmpty(visit)
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			if !visit(v.PersistentVolumeClaim.ClaimName) {
				return false
			}
		case v.Ephemeral != nil:
			if !visit(ephemeral.VolumeClaimName(pod, v)) {
				return false
			}
		}
	}
	return true
}
