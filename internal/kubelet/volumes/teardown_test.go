package volumes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestTearDown(t *testing.T) {
	requireRoot(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
	m, _, _ := newManager(t, testConfigMap(), sec)
	pod := testPod(
		vol("mem", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}),
		vol("disk", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		vol("sec", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}),
		cmVolume("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}),
	)
	other := testPod(vol("mem", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}))
	other.UID = "uid-2"
	mustSetup(t, m, pod)
	mustSetup(t, m, other)
	// Something a container left behind is removed too.
	if err := os.WriteFile(filepath.Join(m.VolumeDir(pod.UID, PluginEmptyDir, "mem"), "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	uids, err := m.PodsOnDisk()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(uids)
	if !slices.Equal(uids, []types.UID{"uid-1", "uid-2"}) {
		t.Errorf("PodsOnDisk = %v", uids)
	}

	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	podDir, _ := filepath.EvalSymlinks(m.PodDir(other.UID))
	podDir = strings.TrimSuffix(podDir, "uid-2") + "uid-1"
	data, _ := os.ReadFile(mountInfoPath)
	if strings.Contains(string(data), podDir) {
		t.Errorf("mounts of the pod remain after TearDown:\n%s", data)
	}
	if _, err := os.Stat(m.PodDir(pod.UID)); !os.IsNotExist(err) {
		t.Errorf("pod dir after TearDown: %v", err)
	}
	if !mounted(t, m.VolumeDir(other.UID, PluginEmptyDir, "mem")) {
		t.Error("TearDown of one pod unmounted another's volume")
	}
	if uids, _ := m.PodsOnDisk(); !slices.Equal(uids, []types.UID{"uid-2"}) {
		t.Errorf("PodsOnDisk after TearDown = %v", uids)
	}
	// Idempotent, and a pod set up again starts afresh.
	if err := m.TearDown(pod.UID); err != nil {
		t.Errorf("second TearDown: %v", err)
	}
	mustSetup(t, m, pod)
	if !mounted(t, m.VolumeDir(pod.UID, PluginSecret, "sec")) {
		t.Error("Setup after TearDown did not mount the secret")
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if err := m.TearDown(other.UID); err != nil {
		t.Fatal(err)
	}
	if uids, _ := m.PodsOnDisk(); len(uids) != 0 {
		t.Errorf("PodsOnDisk = %v, want none", uids)
	}
	if err := m.TearDown("../x"); err == nil {
		t.Error("TearDown of a UID with a slash succeeded")
	}
}

func TestFSGroup(t *testing.T) {
	requireRoot(t)
	m, _, _ := newManager(t, testConfigMap())
	pod := testPod(
		vol("scratch", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		cmVolume("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr[int32](0o600)}),
	)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr[int64](4567)}
	mustSetup(t, m, pod)
	stat := func(path string) syscall.Stat_t {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	scratch := m.VolumeDir(pod.UID, PluginEmptyDir, "scratch")
	if st := stat(scratch); st.Gid != 4567 || st.Mode&0o7777 != 0o2777 {
		t.Errorf("emptyDir gid %d mode %o, want 4567 and 2777", st.Gid, st.Mode&0o7777)
	}
	cfg := m.VolumeDir(pod.UID, PluginConfigMap, "cfg")
	if st := stat(filepath.Join(cfg, "..data", "a")); st.Gid != 4567 || st.Mode&0o777 != 0o640 {
		t.Errorf("configMap file gid %d mode %o, want 4567 and 0640 (0600 plus group read)", st.Gid, st.Mode&0o777)
	}
	if st := stat(filepath.Join(cfg, "a")); st.Gid != 4567 {
		t.Errorf("configMap symlink gid %d, want 4567", st.Gid)
	}
	// Applied once to an emptyDir, not on every sync.
	if err := os.Chown(scratch, -1, 0); err != nil {
		t.Fatal(err)
	}
	mustSetup(t, m, pod)
	if st := stat(scratch); st.Gid != 0 {
		t.Errorf("emptyDir ownership changed again on a later sync")
	}
}

func TestFSGroupOnRootMismatch(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	inner := filepath.Join(dir, "inner")
	if err := os.WriteFile(inner, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	policy := corev1.FSGroupChangeOnRootMismatch
	if err := os.Chown(dir, -1, 5678); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o770|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	changeOwnershipPolicy(newTestLogger(), dir, ptr[int64](5678), false, &policy)
	if fileMode(t, inner).Perm() != 0o600 {
		t.Error("OnRootMismatch walked a volume whose root matches")
	}
	changeOwnershipPolicy(newTestLogger(), dir, ptr[int64](5679), false, &policy)
	if fileMode(t, inner).Perm() != 0o660 {
		t.Error("OnRootMismatch did not walk a volume whose root differs")
	}
}
