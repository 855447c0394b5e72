package volumes

import (
	"errors"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch/internal/kubelet/podconfig"
)

func TestDownwardAPIVolume(t *testing.T) {
	requireRoot(t)
	m, _, _ := newManager(t)
	m.Allocatable = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourceCPU: resource.MustParse("2")}
	field := func(path, file string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: file, FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(container, name, divisor, file string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: file, ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: container, Resource: name, Divisor: resource.MustParse(divisor)}}
	}
	pod := testPod(vol("info", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		DefaultMode: ptr[int32](0o640),
		Items: []corev1.DownwardAPIVolumeFile{
			field("metadata.name", "name"),
			field("metadata.namespace", "ns"),
			field("metadata.uid", "uid"),
			field("metadata.labels", "labels"),
			field("metadata.annotations", "annotations"),
			field("metadata.labels['app']", "app"),
			res("c", "limits.memory", "1Mi", "mem_limit"),
			res("c", "limits.cpu", "1m", "cpu_limit"),
			res("c", "requests.cpu", "1m", "cpu_request"),
			res("init", "limits.memory", "1Mi", "init_mem_limit"),
			{Path: "sub/mode", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr[int32](0o400)},
		},
	}}))
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	pod.Annotations = map[string]string{"note": "a \"quoted\"\nline"}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	vols := mustSetup(t, m, pod)
	dir := m.VolumeDir(pod.UID, PluginDownwardAPI, "info")
	if vols["info"].HostPath != dir || !vols["info"].ReadOnly {
		t.Errorf("volume = %+v", vols["info"])
	}
	if !mounted(t, dir) {
		t.Errorf("%s is not on a tmpfs", dir)
	}
	for file, want := range map[string]string{
		"name":           "p",
		"ns":             "default",
		"uid":            "uid-1",
		"labels":         "app=\"web\"\ntier=\"front\"",
		"annotations":    `note="a \"quoted\"\nline"`,
		"app":            "web",
		"mem_limit":      "4096", // allocatable, no limit
		"cpu_limit":      "500",
		"cpu_request":    "250",
		"init_mem_limit": "4096",
		"sub/mode":       "p",
	} {
		if got := readFile(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if mode := fileMode(t, filepath.Join(dir, "name")); mode.Perm() != 0o640 {
		t.Errorf("defaultMode = %v", mode)
	}
	if mode := fileMode(t, filepath.Join(dir, "sub/mode")); mode.Perm() != 0o400 {
		t.Errorf("item mode = %v", mode)
	}

	// Labels change: the file follows on the next sync.
	pod.Labels["app"] = "api"
	mustSetup(t, m, pod)
	if got := readFile(t, filepath.Join(dir, "app")); got != "api" {
		t.Errorf("app = %q after the label changed", got)
	}
}

func TestDownwardAPIErrors(t *testing.T) {
	m, _, _ := newManager(t)
	for _, tc := range []struct {
		item corev1.DownwardAPIVolumeFile
		want string
	}{
		{corev1.DownwardAPIVolumeFile{Path: "x", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}},
			`MountVolume.SetUp failed for volume "info" : unsupported fieldPath: spec.nodeName`},
		{corev1.DownwardAPIVolumeFile{Path: "x", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}},
			`MountVolume.SetUp failed for volume "info" : container nope not found`},
	} {
		pod := testPod(vol("info", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{tc.item}}}))
		err := setupError(t, m, pod)
		if err.Error() != tc.want || !errors.Is(err, podconfig.ErrInvalid) {
			t.Errorf("error = %q, want %q wrapping ErrInvalid", err, tc.want)
		}
	}
}
