package pods

import (
	"context"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// fakeViews mounts a tmpfs for each view and records what it was asked.
type fakeViews struct {
	mounted []string // "ref key"
	removed []string // prefixes
}

func (f *fakeViews) MountImage(_ context.Context, ref, key, target string) error {
	f.mounted = append(f.mounted, ref+" "+key)
	return unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m")
}

func (f *fakeViews) RemoveImageViews(_ context.Context, prefix string) error {
	f.removed = append(f.removed, prefix)
	return nil
}

// An image volume's image is pulled as its pull policy says, with the
// pull events of a container's, and a view of it (by image ID) is mounted
// read-only into the container; the pod's removal removes the views.
func TestImageVolumePulledAndMounted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (tmpfs mounts)")
	}
	pod := testPod("p", corev1.RestartPolicyAlways)
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: "registry.invalid/data:1", PullPolicy: corev1.PullAlways}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/volume"}}
	h := newHarness(t, pod)
	views := &fakeViews{}
	h.w.ImageViews = views
	h.w.volumes.Images = imageVolumes{h.w}
	h.rt.SetImage("registry.invalid/data:1", 1<<20, false) // present, but the policy is Always
	t.Cleanup(func() { h.w.volumes.TearDown(pod.UID) })

	h.mustSync("p")
	if n := h.called("PullImage registry.invalid/data:1"); n != 1 {
		t.Errorf("pulled the volume's image %d times, want once (Always)", n)
	}
	if want := "sha256:registry.invalid/data:1 orch-image-volume/uid-p/data"; len(views.mounted) != 1 || views.mounted[0] != want {
		t.Errorf("views mounted %v, want [%s]", views.mounted, want)
	}
	events := strings.Join(h.drainEvents(), "\n")
	if !strings.Contains(events, `Normal Pulling Pulling image "registry.invalid/data:1"`) {
		t.Errorf("events:\n%s", events)
	}
	var mount bool
	for _, c := range h.containers("main") {
		for _, m := range h.rt.ContainerConfig(c.Id).GetMounts() {
			if m.ContainerPath == "/volume" {
				mount = m.Readonly && strings.HasSuffix(m.HostPath, "/volumes/kubernetes.io~image/data")
			}
		}
	}
	if !mount {
		t.Error("the container has no read-only mount of the image volume at /volume")
	}

	h.mustSync("p") // mounted: neither pulled nor mounted again
	if n := h.called("PullImage registry.invalid/data:1"); n != 1 || len(views.mounted) != 1 {
		t.Errorf("after a second sync: %d pulls, views %v", n, views.mounted)
	}
	if err := h.w.volumes.TearDown(pod.UID); err != nil {
		t.Fatal(err)
	}
	if len(views.removed) != 1 || views.removed[0] != "orch-image-volume/uid-p/" {
		t.Errorf("views removed %v", views.removed)
	}
}
