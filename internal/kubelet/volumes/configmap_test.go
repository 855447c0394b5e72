package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
		Data:       map[string]string{"a": "alpha", "b": "beta"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2}},
	}
}

func cmVolume(name string, src corev1.ConfigMapVolumeSource) corev1.Volume {
	return vol(name, corev1.VolumeSource{ConfigMap: &src})
}

// entries are the names in dir, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestConfigMapVolume(t *testing.T) {
	m, _, _ := newManager(t, testConfigMap())
	ref := corev1.LocalObjectReference{Name: "cfg"}
	pod := testPod(
		cmVolume("all", corev1.ConfigMapVolumeSource{LocalObjectReference: ref}),
		cmVolume("items", corev1.ConfigMapVolumeSource{LocalObjectReference: ref, DefaultMode: ptr[int32](0o600), Items: []corev1.KeyToPath{
			{Key: "a", Path: "deep/er/a.txt"},
			{Key: "bin", Path: "bin", Mode: ptr[int32](0o400)},
		}}),
	)
	vols := mustSetup(t, m, pod)

	all := m.VolumeDir(pod.UID, PluginConfigMap, "all")
	if got := vols["all"]; got.HostPath != all || !got.ReadOnly {
		t.Errorf("volume = %+v, want %s read-only", got, all)
	}
	if got := readFile(t, filepath.Join(all, "a")); got != "alpha" {
		t.Errorf("a = %q", got)
	}
	if got := readFile(t, filepath.Join(all, "bin")); got != "\x00\x01\x02" {
		t.Errorf("bin = %q", got)
	}
	if mode := fileMode(t, filepath.Join(all, "b")); mode.Perm() != 0o644 {
		t.Errorf("default mode = %v, want 0644", mode)
	}
	link, err := os.Readlink(filepath.Join(all, "a"))
	if err != nil || link != "..data/a" {
		t.Errorf("a links to %q (%v), want ..data/a", link, err)
	}
	es := entries(t, all)
	if len(es) != 5 || !slices.Contains(es, "..data") || es[0][:4] != "..20" {
		t.Errorf("entries = %v, want ..<timestamp>, ..data, a, b, bin", es)
	}

	items := m.VolumeDir(pod.UID, PluginConfigMap, "items")
	if got := entries(t, items); len(got) != 4 || got[2] != "bin" || got[3] != "deep" {
		t.Errorf("entries = %v, want ..<timestamp>, ..data, bin, deep", got)
	}
	if got := readFile(t, filepath.Join(items, "deep/er/a.txt")); got != "alpha" {
		t.Errorf("deep/er/a.txt = %q", got)
	}
	if mode := fileMode(t, filepath.Join(items, "deep/er/a.txt")); mode.Perm() != 0o600 {
		t.Errorf("defaultMode = %v, want 0600", mode)
	}
	if mode := fileMode(t, filepath.Join(items, "bin")); mode.Perm() != 0o400 {
		t.Errorf("item mode = %v, want 0400", mode)
	}
}

func TestConfigMapOptional(t *testing.T) {
	m, _, _ := newManager(t, testConfigMap())
	pod := testPod(
		cmVolume("gone", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr(true)}),
		cmVolume("somekeys", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Optional: ptr(true),
			Items: []corev1.KeyToPath{{Key: "a", Path: "a"}, {Key: "missing", Path: "m"}}}),
	)
	mustSetup(t, m, pod)
	if got := entries(t, m.VolumeDir(pod.UID, PluginConfigMap, "gone")); len(got) != 2 {
		t.Errorf("optional missing ConfigMap: entries = %v, want only the data dir", got)
	}
	if got := entries(t, m.VolumeDir(pod.UID, PluginConfigMap, "somekeys")); len(got) != 3 || got[2] != "a" {
		t.Errorf("optional missing key: entries = %v", got)
	}
}

func TestConfigMapErrors(t *testing.T) {
	m, _, _ := newManager(t, testConfigMap())
	pod := testPod(
		cmVolume("gone", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}),
		cmVolume("badkey", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			Items: []corev1.KeyToPath{{Key: "missing", Path: "m"}}}),
		cmVolume("good", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}),
	)
	vols, err := m.Setup(context.Background(), pod)
	if _, ok := vols["good"]; !ok || len(vols) != 1 {
		t.Errorf("volumes = %v, want the good one", vols)
	}
	errs := MountErrors(err)
	if len(errs) != 2 {
		t.Fatalf("MountErrors = %v, want 2", errs)
	}
	if want := `MountVolume.SetUp failed for volume "gone" : configmaps "nope" not found`; errs[0].Error() != want {
		t.Errorf("error = %q, want %q", errs[0], want)
	}
	if !apierrors.IsNotFound(errs[0]) || !errors.Is(errs[0], ErrMountFailed) {
		t.Errorf("error %v should be a NotFound and ErrMountFailed", errs[0])
	}
	if want := `MountVolume.SetUp failed for volume "badkey" : configmap references non-existent config key: missing`; errs[1].Error() != want {
		t.Errorf("error = %q, want %q", errs[1], want)
	}
	// Nothing was made for the failed volumes.
	if _, err := os.Stat(m.VolumeDir(pod.UID, PluginConfigMap, "gone")); !os.IsNotExist(err) {
		t.Errorf("failed volume has a directory: %v", err)
	}
}

func TestSecretVolume(t *testing.T) {
	requireRoot(t)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"},
		Data:       map[string][]byte{"user": []byte("admin"), "pass": []byte("hunter2")},
	}
	m, _, _ := newManager(t, sec)
	pod := testPod(
		vol("creds", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr[int32](0o400)}}),
		vol("one", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{{Key: "pass", Path: "p/w"}}}}),
		vol("gone", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope", Optional: ptr(true)}}),
	)
	vols := mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginSecret, "creds")
	if got := vols["creds"]; got.HostPath != dir || !got.ReadOnly {
		t.Errorf("volume = %+v", got)
	}
	if !mounted(t, dir) {
		t.Errorf("secret volume %s is not on a tmpfs", dir)
	}
	if got := readFile(t, filepath.Join(dir, "pass")); got != "hunter2" {
		t.Errorf("pass = %q", got)
	}
	if mode := fileMode(t, filepath.Join(dir, "user")); mode.Perm() != 0o400 {
		t.Errorf("mode = %v, want 0400", mode)
	}
	if got := readFile(t, filepath.Join(m.VolumeDir(pod.UID, PluginSecret, "one"), "p/w")); got != "hunter2" {
		t.Errorf("p/w = %q", got)
	}

	pod.Spec.Volumes = append(pod.Spec.Volumes, vol("badkey", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", Items: []corev1.KeyToPath{{Key: "x", Path: "x"}}}}),
		vol("missing", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope"}}))
	errs := MountErrors(setupError(t, m, pod))
	if len(errs) != 2 || errs[0].Error() != `MountVolume.SetUp failed for volume "badkey" : references non-existent secret key: x` ||
		errs[1].Error() != `MountVolume.SetUp failed for volume "missing" : secrets "nope" not found` {
		t.Errorf("errors = %v", errs)
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if mounted(t, dir) {
		t.Error("TearDown left the secret mounted")
	}
}

func TestSetupGetsEachObjectOnce(t *testing.T) {
	requireRoot(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
	m, client, _ := newManager(t, testConfigMap(), sec)
	ref := corev1.LocalObjectReference{Name: "cfg"}
	pod := testPod(
		cmVolume("one", corev1.ConfigMapVolumeSource{LocalObjectReference: ref}),
		cmVolume("two", corev1.ConfigMapVolumeSource{LocalObjectReference: ref, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}),
		vol("three", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
		}}}),
		vol("four", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}),
		vol("scratch", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
	)
	for range 3 {
		client.ClearActions()
		mustSetup(t, m, pod)
		var gets []string
		for _, a := range client.Actions() {
			gets = append(gets, a.GetVerb()+" "+a.GetResource().Resource)
		}
		slices.Sort(gets)
		if want := []string{"get configmaps", "get secrets"}; !slices.Equal(gets, want) {
			t.Fatalf("API calls = %v, want %v", gets, want)
		}
	}
}

func TestNestedMountpoints(t *testing.T) {
	m, _, _ := newManager(t, testConfigMap())
	pod := testPod(
		cmVolume("cfg", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}),
		vol("data", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
	)
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/app"},
		{Name: "data", MountPath: "/etc/app/data/"},
		{Name: "data", MountPath: "/etc/app/data/deeper", SubPath: "x"},
		{Name: "data", MountPath: "/etc/application"},
	}
	mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginConfigMap, "cfg")
	if !isDir(filepath.Join(dir, "data")) {
		t.Error("no mount point made for the nested volume")
	}
	if isDir(filepath.Join(dir, "data", "deeper")) {
		t.Error("mount point made below a nested volume")
	}
	// The writer leaves it alone.
	mustSetup(t, m, pod)
	if !isDir(filepath.Join(dir, "data")) {
		t.Error("nested mount point removed")
	}
}
