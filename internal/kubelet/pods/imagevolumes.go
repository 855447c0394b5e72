package pods

import (
	"context"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/kubelet/volumes"
)

// ImageViews mounts images read-only: the agent's containerd
// (containerd.Store).
type ImageViews interface {
	// MountImage mounts at target a read-only view, named key, of the
	// image ref.
	MountImage(ctx context.Context, ref, key, target string) error
	// RemoveImageViews removes the views whose keys start with prefix.
	RemoveImageViews(ctx context.Context, prefix string) error
}

// imageVolumes makes the pods' image volumes: the image is pulled as a
// container's is (pull policy, the pod's pull secrets, events), then
// w.ImageViews mounts a view of it named after the pod and the volume.
type imageVolumes struct{ w *Workers }

var _ volumes.ImageMounter = imageVolumes{}

func (v imageVolumes) MountImage(ctx context.Context, pod *corev1.Pod, src *corev1.ImageVolumeSource, target string) error {
	img, err := v.w.ensureImageOf(ctx, pod, nil, src.Reference, src.PullPolicy, nil)
	if err != nil {
		return err
	}
	return v.w.ImageViews.MountImage(ctx, img.Id, imageViewPrefix(pod.UID)+filepath.Base(target), target)
}

func (v imageVolumes) ReleaseImages(ctx context.Context, uid types.UID) error {
	return v.w.ImageViews.RemoveImageViews(ctx, imageViewPrefix(uid))
}

// imageViewPrefix begins the keys of the image views of the pod with uid.
func imageViewPrefix(uid types.UID) string {
	return "orch-image-volume/" + string(uid) + "/"
}
