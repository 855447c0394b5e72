package node

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/apiserver/authz"
)

func nodeUser(name string) authz.User {
	return authz.User{Name: authz.NodeUserPrefix + name, Groups: []string{authz.NodesGroup, authz.AuthenticatedGroup}}
}

// pod returns a pod in ns1 bound to node with the given volumes.
func pod(name, node string, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name, UID: types.UID(name + "-uid")},
		Spec:       corev1.PodSpec{NodeName: node, Volumes: volumes, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
}

func secretVolume(secret string) corev1.Volume {
	return corev1.Volume{Name: "v-" + secret, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

func claimVolume(claim string) corev1.Volume {
	return corev1.Volume{Name: "v-" + claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

func volume(name, claimNS, claim string, source corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: source}}
	if claim != "" {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: claimNS, Name: claim}
	}
	return pv
}

func attachment(name, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.VolumeAttachmentSpec{NodeName: node}}
}

// fixture is a cluster of two nodes: pod1 on node1 names objects in every
// way a pod can; pod2 on node2 shares one secret; a mirror pod on node1
// names a secret it must not grant; pv1 is bound to pod1's claim.
func fixture() *Authorizer {
	a := New()
	p1 := pod("pod1", "node1",
		secretVolume("vol-secret"),
		claimVolume("claim1"),
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		}}}},
		corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
		corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
	)
	p1.Spec.ServiceAccountName = "sa1"
	p1.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull-secret"}}
	p1.Spec.InitContainers = []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}}}}}
	p1.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-cm"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}},
	}
	a.Update(p1)

	p2 := pod("pod2", "node2", secretVolume("shared"), secretVolume("node2-secret"))
	p2.Spec.ServiceAccountName = "sa2"
	a.Update(p2)

	mirror := pod("mirror", "node1", secretVolume("mirror-secret"))
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	a.Update(mirror)

	a.Update(pod("unbound", "", secretVolume("unbound-secret")))

	a.Update(volume("pv1", "ns1", "claim1", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver:                     "d",
		NodeStageSecretRef:         &corev1.SecretReference{Namespace: "ns1", Name: "stage-secret"},
		ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "ns1", Name: "controller-secret"},
	}}))
	a.Update(volume("pv2", "ns1", "claim-unused", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}))
	a.Update(volume("pv3", "", "", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/y"}}))
	a.Update(attachment("va1", "node1"))
	return a
}
