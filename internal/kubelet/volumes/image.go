package volumes

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/kubelet/podconfig"
)

// PluginImage is the directory of image volumes under <pod dir>/volumes.
const PluginImage = "kubernetes.io~image"

// ImageMounter makes image volumes: the pod workers pull the image and the
// agent's containerd mounts it.
type ImageMounter interface {
	// MountImage pulls the image of src as its pull policy and the pod's
	// pull secrets allow, and mounts its file system read-only at target.
	MountImage(ctx context.Context, pod *corev1.Pod, src *corev1.ImageVolumeSource, target string) error
	// ReleaseImages drops what MountImage kept for the pod with uid, once
	// its mounts are gone.
	ReleaseImages(ctx context.Context, uid types.UID) error
}

// imageVolume is an image volume: mounted once, then left as it is for
// the pod's life (as upstream, a new image under the same reference is
// not seen by a running pod).
func (s *setup) imageVolume(name string, src *corev1.ImageVolumeSource) (podconfig.Volume, error) {
	dir := s.m.VolumeDir(s.pod.UID, PluginImage, name)
	mounted, err := isMountPoint(dir)
	if err != nil {
		return podconfig.Volume{}, err
	}
	if !mounted {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return podconfig.Volume{}, err
		}
		if err := s.m.Images.MountImage(s.ctx, s.pod, src, dir); err != nil {
			return podconfig.Volume{}, fmt.Errorf("image volume %q: %w", src.Reference, err)
		}
	}
	return podconfig.Volume{HostPath: dir, ReadOnly: true}, nil
}
