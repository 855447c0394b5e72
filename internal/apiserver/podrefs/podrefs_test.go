package podrefs

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ref(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

func vol(name string, s corev1.VolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: s}
}

// everything is a pod that names objects in every way a pod can.
func everything() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{ref("pull"), ref("")},
			InitContainers: []corev1.Container{{Env: []corev1.EnvVar{
				{Name: "a", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("init-env")}}},
				{Name: "b", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("init-env-cm")}}},
				{Name: "c", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			}}},
			Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("envfrom")}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("envfrom-cm")}},
			}}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Env: []corev1.EnvVar{
				{Name: "d", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("ephemeral-env")}}},
			}}}},
			Volumes: []corev1.Volume{
				vol("secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol"}}),
				vol("cm", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("vol-cm")}}),
				vol("proj", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: ref("proj")}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("proj-cm")}},
				}}}),
				vol("csi", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi"}}}),
				vol("azure", corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "azure"}}),
				vol("ceph", corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "ceph"}}}),
				vol("cinder", corev1.VolumeSource{Cinder: &corev1.CinderVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "cinder"}}}),
				vol("flex", corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "flex"}}}),
				vol("rbd", corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "rbd"}}}),
				vol("scaleio", corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "scaleio"}}}),
				vol("iscsi", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "iscsi"}}}),
				vol("storageos", corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "storageos"}}}),
				vol("claim", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}),
				vol("eph", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}),
				vol("empty", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
			},
		},
	}
}

func collect(walk func(*corev1.Pod, Visit) bool, pod *corev1.Pod) []string {
	var names []string
	walk(pod, func(n string) bool { names = append(names, n); return true })
	slices.Sort(names)
	return names
}

func TestWalks(t *testing.T) {
	p := everything()
	tests := []struct {
		name string
		walk func(*corev1.Pod, Visit) bool
		want string
	}{
		{"secrets", Secrets, "azure ceph cinder csi envfrom ephemeral-env flex init-env iscsi proj pull rbd scaleio storageos vol"},
		{"configmaps", ConfigMaps, "envfrom-cm init-env-cm proj-cm vol-cm"},
		{"claims", Claims, "claim p-eph"},
	}
	for _, tc := range tests {
		if got := strings.Join(collect(tc.walk, p), " "); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// A walk stops when the visitor says so.
	n := 0
	if Secrets(p, func(string) bool { n++; return n < 3 }) || n != 3 {
		t.Errorf("the walk went on after the visitor stopped it (%d visits)", n)
	}
	if !Secrets(&corev1.Pod{}, func(string) bool { return false }) {
		t.Error("a pod naming nothing reported a stopped walk")
	}
}

func TestPVSecrets(t *testing.T) {
	claimed := func(s corev1.PersistentVolumeSource) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: s,
			ClaimRef: &corev1.ObjectReference{Namespace: "claim-ns", Name: "c"}}}
	}
	other := "other"
	tests := []struct {
		name string
		pv   *corev1.PersistentVolume
		want string
	}{
		{"csi", claimed(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "a", Name: "cp"},
			ControllerExpandSecretRef:  &corev1.SecretReference{Namespace: "a", Name: "ce"},
			NodePublishSecretRef:       &corev1.SecretReference{Namespace: "a", Name: "np"},
			NodeStageSecretRef:         &corev1.SecretReference{Namespace: "a", Name: "ns"},
			NodeExpandSecretRef:        &corev1.SecretReference{Name: "ne"},
		}}), "a/cp:false a/ce:false a/np:true a/ns:true /ne:true"},
		{"rbd in the claim's namespace", claimed(corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{SecretRef: &corev1.SecretReference{Name: "r"}}}), "claim-ns/r:true"},
		{"rbd in its own namespace", claimed(corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{SecretRef: &corev1.SecretReference{Namespace: "x", Name: "r"}}}), "x/r:true"},
		{"azure file", claimed(corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{SecretName: "az"}}), "claim-ns/az:true"},
		{"azure file with a namespace", claimed(corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{SecretName: "az", SecretNamespace: &other}}), "other/az:true"},
		{"cinder keeps its own (empty) namespace", claimed(corev1.PersistentVolumeSource{Cinder: &corev1.CinderPersistentVolumeSource{SecretRef: &corev1.SecretReference{Name: "ci"}}}), "/ci:true"},
		{"iscsi", claimed(corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{SecretRef: &corev1.SecretReference{Name: "is"}}}), "claim-ns/is:true"},
		{"host path", claimed(corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{}}), ""},
	}
	for _, tc := range tests {
		var got []string
		PVSecrets(tc.pv, func(ns, name string, kubelet bool) bool {
			got = append(got, ns+"/"+name+":"+map[bool]string{true: "true", false: "false"}[kubelet])
			return true
		})
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, s, tc.want)
		}
	}
}

func TestAPIObjectReference(t *testing.T) {
	with := func(f func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		f(&p.Spec)
		return p
	}
	volumes := func(v ...corev1.Volume) *corev1.Pod { return with(func(s *corev1.PodSpec) { s.Volumes = v }) }
	projected := func(s ...corev1.VolumeProjection) *corev1.Pod {
		return volumes(vol("p", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: s}}))
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
		err  string
	}{
		{"nothing", with(func(*corev1.PodSpec) {}), "", ""},
		{"local volumes", volumes(vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
			vol("b", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}), vol("c", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{}})), "", ""},
		{"downward API projection", projected(corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{}}), "", ""},
		{"service account", with(func(s *corev1.PodSpec) { s.ServiceAccountName = "sa" }), "serviceaccounts", ""},
		{"pull secret", with(func(s *corev1.PodSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{ref("x")} }), "secrets", ""},
		{"secret volume", volumes(vol("s", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}})), "secrets", ""},
		{"secret volume without a name", volumes(vol("s", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}})), "secrets (via secret volumes)", ""},
		{"configmap env", with(func(s *corev1.PodSpec) {
			s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("x")}}}
		}), "configmaps", ""},
		{"resource claims", with(func(s *corev1.PodSpec) { s.ResourceClaims = []corev1.PodResourceClaim{{Name: "c"}} }), "resourceclaims", ""},
		{"csi", volumes(vol("c", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}})), "csidrivers (via CSI volumes)", ""},
		{"claim", volumes(vol("c", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "x"}})), "persistentvolumeclaims", ""},
		{"ephemeral", volumes(vol("e", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}})), "persistentvolumeclaims (via ephemeral volumes)", ""},
		{"glusterfs", volumes(vol("g", corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{}})), "endpoints (via glusterFS volumes)", ""},
		{"azure file", volumes(vol("a", corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{}})), "secrets (via azureFile volumes)", ""},
		{"projected token", projected(corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{}}), "serviceaccounts (via projected volumes)", ""},
		{"projected cluster trust bundle", projected(corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{}}), "clustertrustbundles", ""},
		{"projected pod certificate", projected(corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{}}), "podcertificates", ""},
		{"empty projection", projected(corev1.VolumeProjection{}), "", `unknown source for projected volume "p"`},
		{"empty volume", volumes(vol("v", corev1.VolumeSource{})), "", `unknown volume type for volume  "v"`},
	}
	for _, tc := range tests {
		has, what, err := APIObjectReference(tc.pod)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if what != tc.want || gotErr != tc.err || has != (tc.want != "" || tc.err != "") {
			t.Errorf("%s: got %v %q %q, want %q %q", tc.name, has, what, gotErr, tc.want, tc.err)
		}
	}
}
