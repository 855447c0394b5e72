package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/kubelet/podconfig"
	"orch/internal/localpath"
)

func boundClaim(name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("claim-" + name)},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func boundPV(name, claim string, src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: src,
			ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: claim, UID: types.UID("claim-" + claim)},
		},
	}
}

func claimVolume(name, claim string, readOnly bool) corev1.Volume {
	return vol(name, corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}})
}

func TestPersistentVolumeClaims(t *testing.T) {
	requireRoot(t)
	base := t.TempDir()
	hostDir := filepath.Join(base, "pv-host", "data")
	localDir := filepath.Join(base, "pv-local")
	if err := setupDir(localDir); err != nil {
		t.Fatal(err)
	}
	objs := []runtime.Object{
		boundClaim("host", "pv-host"),
		boundPV("pv-host", "host", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: ptr(corev1.HostPathDirectoryOrCreate)}}),
		boundClaim("local", "pv-local"),
		boundPV("pv-local", "local", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: localDir}}),
	}
	m, client, _ := newManager(t, objs...)
	pod := testPod(claimVolume("h", "host", true), claimVolume("l", "local", false))
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr[int64](3456)}
	vols := mustSetup(t, m, pod)
	if got := vols["h"]; got.HostPath != hostDir || !got.ReadOnly {
		t.Errorf("hostPath claim = %+v, want %s read-only", got, hostDir)
	}
	if !isDir(hostDir) {
		t.Error("DirectoryOrCreate hostPath PV not made")
	}
	if got := vols["l"]; got.HostPath != localDir || got.ReadOnly {
		t.Errorf("local claim = %+v, want %s read-write", got, localDir)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(localDir, &st); err != nil || st.Gid != 3456 || st.Mode&syscall.S_ISGID == 0 {
		t.Errorf("local PV gid %d mode %o (%v), want fsGroup 3456 with setgid", st.Gid, st.Mode, err)
	}
	// Resolved once: later syncs ask the API nothing.
	client.ClearActions()
	mustSetup(t, m, pod)
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("second Setup made %d API calls", len(a))
	}
}

// TestEphemeralLocalPathClaim: a generic ephemeral volume is the claim
// POD-VOLUME made for the pod; a local-path volume's directory is made on
// first use, writable by anyone; a claim of that name the pod does not own
// is refused.
func TestEphemeralLocalPathClaim(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "storage", "pvc-1_default_p-scratch")
	owned := boundClaim("p-scratch", "pvc-1")
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "uid-1", Controller: ptr(true)}}
	pv := boundPV("pvc-1", "p-scratch", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}})
	pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": localpath.Provisioner}
	m, _, _ := newManager(t, owned, pv, boundClaim("p-foreign", "pvc-2"))
	ephemeral := func(name string) corev1.Volume {
		return vol(name, corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}})
	}
	vols := mustSetup(t, m, testPod(ephemeral("scratch")))
	if got := vols["scratch"]; got.HostPath != dir || got.ReadOnly {
		t.Errorf("ephemeral volume = %+v, want %s read-write", got, dir)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o777 || !st.IsDir() {
		t.Errorf("local-path directory: %v, %v; want a directory of mode 0777", st, err)
	}
	err := setupError(t, m, testPod(ephemeral("foreign")))
	if want := `MountVolume.SetUp failed for volume "foreign" : PVC default/p-foreign was not created for pod default/p (pod is not owner)`; err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
}

func TestPersistentVolumeClaimErrors(t *testing.T) {
	pending := boundClaim("pending", "")
	pending.Status.Phase = corev1.ClaimPending
	deleting := boundClaim("deleting", "pv-x")
	deleting.DeletionTimestamp = &metav1.Time{}
	wrongUID := boundPV("pv-wrong", "wrong", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}})
	wrongUID.Spec.ClaimRef.UID = "other"
	block := boundPV("pv-block", "block", corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/dev/null"}})
	block.Spec.VolumeMode = ptr(corev1.PersistentVolumeBlock)
	m, _, _ := newManager(t,
		pending, deleting,
		boundClaim("nopv", "pv-none"),
		boundClaim("wrong", "pv-wrong"), wrongUID,
		boundClaim("nfs", "pv-nfs"), boundPV("pv-nfs", "nfs", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/x"}}),
		boundClaim("file", "pv-file"), boundPV("pv-file", "file", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev/null", Type: ptr(corev1.HostPathDirectory)}}),
		boundClaim("block", "pv-block"), block,
	)
	for _, tc := range []struct {
		claim       string
		want        string
		unsupported bool
	}{
		{"missing", `error processing PVC default/missing: failed to fetch PVC from API server: persistentvolumeclaims "missing" not found`, false},
		{"pending", "error processing PVC default/pending: PVC is not bound", false},
		{"deleting", "error processing PVC default/deleting: PVC is being deleted", false},
		{"nopv", `error processing PVC default/nopv: failed to fetch PV pv-none from API server: persistentvolumes "pv-none" not found`, false},
		{"wrong", "error processing PVC default/wrong: found PV object pv-wrong but its pv.Spec.ClaimRef.UID other does not point to claim.UID claim-wrong", false},
		{"nfs", "persistent volume pv-nfs: nfs volumes are not supported by orch", true},
		{"file", "hostPath type check failed: /dev/null is not a directory, it's a CharDevice", false},
		{"block", "volume data has volumeMode Block: block volumes are not supported by orch", true},
	} {
		t.Run(tc.claim, func(t *testing.T) {
			pod := testPod(claimVolume("data", tc.claim, false))
			err := setupError(t, m, pod)
			want := `MountVolume.SetUp failed for volume "data" : ` + tc.want
			if err.Error() != want {
				t.Errorf("error = %q\nwant    %q", err, want)
			}
			if errors.Is(err, podconfig.ErrUnsupported) != tc.unsupported {
				t.Errorf("wraps ErrUnsupported = %v, want %v", !tc.unsupported, tc.unsupported)
			}
		})
	}
}

func TestUnsupportedVolumes(t *testing.T) {
	m, _, _ := newManager(t)
	pod := testPod(
		vol("nfs", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}),
		vol("csi", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}),
		vol("img", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}),
		vol("iscsi", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{}}),
		vol("huge", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePagesPrefix + "2Mi"}}),
		vol("ok", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		vol("bad/name", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
	)
	vols, err := m.Setup(t.Context(), pod)
	if _, ok := vols["ok"]; !ok || len(vols) != 1 {
		t.Errorf("volumes = %v, want the emptyDir", vols)
	}
	var got []string
	for _, e := range MountErrors(err) {
		got = append(got, e.Error())
		if !errors.Is(e, ErrMountFailed) {
			t.Errorf("%v does not wrap ErrMountFailed", e)
		}
		if e.Volume != "bad/name" && !errors.Is(e, podconfig.ErrUnsupported) {
			t.Errorf("%v does not wrap ErrUnsupported", e)
		}
	}
	want := []string{
		`MountVolume.SetUp failed for volume "nfs" : nfs volumes are not supported by orch`,
		`MountVolume.SetUp failed for volume "csi" : csi volumes are not supported by orch`,
		`MountVolume.SetUp failed for volume "img" : image volumes are not supported by orch`,
		`MountVolume.SetUp failed for volume "iscsi" : iscsi volumes are not supported by orch`,
		`MountVolume.SetUp failed for volume "huge" : emptyDir volumes of medium HugePages-2Mi are not supported by orch`,
		`MountVolume.SetUp failed for volume "bad/name" : volume name "bad/name" cannot name a directory`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
