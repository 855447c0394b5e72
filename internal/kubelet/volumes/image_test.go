package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeImages mounts a tmpfs holding the image's reference as "ref" for
// each image volume, and records the calls.
type fakeImages struct {
	mounts   []string
	released []types.UID
	fail     error
}

func (f *fakeImages) MountImage(_ context.Context, _ *corev1.Pod, src *corev1.ImageVolumeSource, target string) error {
	if f.fail != nil {
		return f.fail
	}
	f.mounts = append(f.mounts, src.Reference)
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(target, "ref"), []byte(src.Reference), 0o644)
}

func (f *fakeImages) ReleaseImages(_ context.Context, uid types.UID) error {
	f.released = append(f.released, uid)
	return nil
}

func TestImageVolume(t *testing.T) {
	requireRoot(t)
	m, _, _ := newManager(t)
	images := &fakeImages{}
	m.Images = images
	pod := testPod(vol("img", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.invalid/data:1", PullPolicy: corev1.PullIfNotPresent}}))

	for range 2 { // the second Setup finds it mounted
		vols := mustSetup(t, m, pod)
		want := m.VolumeDir(pod.UID, PluginImage, "img")
		if got := vols["img"]; got.HostPath != want || !got.ReadOnly {
			t.Fatalf("volume %+v, want read-only at %s", got, want)
		}
	}
	if len(images.mounts) != 1 {
		t.Errorf("MountImage called for %v, want once", images.mounts)
	}
	dir := m.VolumeDir(pod.UID, PluginImage, "img")
	if data, _ := os.ReadFile(filepath.Join(dir, "ref")); string(data) != "registry.invalid/data:1" {
		t.Errorf("the volume holds %q", data)
	}
	if err := m.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if mounted(t, dir) || len(images.released) != 1 || images.released[0] != pod.UID {
		t.Errorf("after TearDown: mounted %v, released %v", mounted(t, dir), images.released)
	}

	// A pull that fails is a mount error naming the image.
	images.fail = errors.New("pull failed")
	err := setupError(t, m, pod)
	if me := MountErrors(err); len(me) != 1 || me[0].Volume != "img" || !errors.Is(err, images.fail) {
		t.Errorf("error %v, want a mount error of img wrapping the pull's", err)
	}
}
