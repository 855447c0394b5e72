package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEmptyDirOnDisk(t *testing.T) {
	m, _, _ := newManager(t)
	pod := testPod(vol("scratch", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}))
	vols := mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginEmptyDir, "scratch")
	if got := vols["scratch"]; got.HostPath != dir || got.ReadOnly {
		t.Fatalf("volume = %+v, want %s read-write", got, dir)
	}
	if want := filepath.Join(m.Root, "pods", "uid-1", "volumes", "kubernetes.io~empty-dir", "scratch"); dir != want {
		t.Errorf("dir = %s, want %s", dir, want)
	}
	if mode := fileMode(t, dir); mode.Perm() != 0o777 || !mode.IsDir() {
		t.Errorf("mode = %v, want drwxrwxrwx", mode)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSetup(t, m, pod)
	if got := readFile(t, filepath.Join(dir, "f")); got != "kept" {
		t.Errorf("second Setup lost the contents: %q", got)
	}
	// A lost directory is made again.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	mustSetup(t, m, pod)
	if !isDir(dir) {
		t.Error("Setup did not make the lost directory again")
	}
}

func TestEmptyDirMemory(t *testing.T) {
	requireRoot(t)
	m, _, _ := newManager(t)
	limit := resource.MustParse("2Mi")
	pod := testPod(vol("shm", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &limit}}))
	mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginEmptyDir, "shm")
	if !mounted(t, dir) {
		t.Fatalf("%s is not mounted", dir)
	}
	if opts := mountOptions(t, dir); !strings.HasPrefix(opts, "tmpfs ") || !strings.Contains(opts, "size=2048k") {
		t.Errorf("mount = %q, want a tmpfs of size=2048k", opts)
	}
	// Idempotent: not mounted twice.
	mustSetup(t, m, pod)
	real, _ := filepath.EvalSymlinks(dir)
	mps, _ := mountsUnder(real)
	if len(mps) != 1 {
		t.Errorf("mounts under %s after two Setups: %v", dir, mps)
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if mounted(t, dir) {
		t.Error("TearDown left the tmpfs mounted")
	}
	if _, err := os.Stat(m.PodDir(pod.UID)); !os.IsNotExist(err) {
		t.Errorf("pod dir after TearDown: %v", err)
	}
}

func TestTmpfsSize(t *testing.T) {
	mi := func(s string) int64 { q := resource.MustParse(s); return q.Value() }
	withLimit := func(limits ...string) *corev1.Pod {
		pod := testPod()
		pod.Spec.Containers = nil
		for _, l := range limits {
			c := corev1.Container{Name: "c" + l}
			if l != "" {
				c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(l)}
			}
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
		return pod
	}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	for _, tc := range []struct {
		name        string
		allocatable string
		pod         *corev1.Pod
		sizeLimit   *resource.Quantity
		want        int64
	}{
		{"nothing known", "", withLimit(""), nil, 0},
		{"allocatable", "1Gi", withLimit(""), nil, mi("1Gi")},
		{"pod limit below allocatable", "1Gi", withLimit("100Mi", "28Mi"), nil, mi("128Mi")},
		{"a container without limit", "1Gi", withLimit("100Mi", ""), nil, mi("1Gi")},
		{"sizeLimit below", "1Gi", withLimit("100Mi"), q("10Mi"), mi("10Mi")},
		{"sizeLimit above pod limit", "1Gi", withLimit("100Mi"), q("200Mi"), mi("100Mi")},
		{"sizeLimit without allocatable", "", withLimit(""), q("5Mi"), mi("5Mi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(t.TempDir(), nil, nil)
			if tc.allocatable != "" {
				m.Allocatable = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tc.allocatable)}
			}
			if got := m.tmpfsSize(tc.pod, tc.sizeLimit); got != tc.want {
				t.Errorf("tmpfsSize = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestOverSizeLimit(t *testing.T) {
	m, _, _ := newManager(t)
	limit := resource.MustParse("1Mi")
	pod := testPod(
		vol("free", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		vol("capped", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}),
	)
	mustSetup(t, m, pod)
	write := func(vol, name string, size int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(m.VolumeDir(pod.UID, PluginEmptyDir, vol), name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("free", "big", 4<<20)
	write("capped", "small", 100<<10)
	if name, used, _, over := m.OverSizeLimit(pod); over {
		t.Fatalf("over = %s (%d bytes), want none", name, used)
	}
	write("capped", "big", 2<<20)
	// A hard link is counted once.
	dir := m.VolumeDir(pod.UID, PluginEmptyDir, "capped")
	if err := os.Link(filepath.Join(dir, "big"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	name, used, lim, over := m.OverSizeLimit(pod)
	if !over || name != "capped" || lim != 1<<20 {
		t.Fatalf("OverSizeLimit = %s %d %d %v, want capped over 1Mi", name, used, lim, over)
	}
	if used < 2<<20 || used >= 4<<20 {
		t.Errorf("used = %d, want about 2.1Mi (the hard link counted once)", used)
	}
}
