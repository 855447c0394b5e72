package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages lists the images that match filter (all when nil).
func (r *Runtime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	res, err := call(ctx, r, 0, "ListImages", "", func(ctx context.Context) (*runtimeapi.ListImagesResponse, error) {
		return r.images.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	})
	if err != nil {
		return nil, err
	}
	return res.Images, nil
}

// ImageStatus returns an image's status; its Image is nil when the image is
// not present (that is not an error in CRI).
func (r *Runtime) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return call(ctx, r, 0, "ImageStatus", image.GetImage(), func(ctx context.Context) (*runtimeapi.ImageStatusResponse, error) {
		return r.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
	})
}

// PullImage pulls an image and returns its reference (the image ID). A pull
// has no deadline but ctx's: large images take as long as they take.
func (r *Runtime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	res, err := r.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", fmtErr("PullImage", image.GetImage(), err)
	}
	return res.ImageRef, nil
}

// RemoveImage removes an image.
func (r *Runtime) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := call(ctx, r, 0, "RemoveImage", image.GetImage(), func(ctx context.Context) (*runtimeapi.RemoveImageResponse, error) {
		return r.images.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	})
	return err
}

// ImageFsInfo returns the usage of the filesystems that hold images.
func (r *Runtime) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return call(ctx, r, 0, "ImageFsInfo", "", func(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
		return r.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	})
}
