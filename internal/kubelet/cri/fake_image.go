package cri

import (
	"context"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages implements Runtime.ListImages.
func (f *Fake) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ListImages", ""); err != nil {
		return nil, err
	}
	var out []*runtimeapi.Image
	for _, ref := range sortedKeys(f.images) {
		if filter.GetImage().GetImage() != "" && filter.Image.Image != ref {
			continue
		}
		out = append(out, clone(f.images[ref]))
	}
	return out, nil
}

// ImageStatus implements Runtime.ImageStatus: Image is nil when absent.
func (f *Fake) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ImageStatus", image.GetImage()); err != nil {
		return nil, err
	}
	res := &runtimeapi.ImageStatusResponse{}
	if img := f.findImage(image.GetImage()); img != nil {
		res.Image = clone(img)
	}
	return res, nil
}

// PullImage implements Runtime.PullImage: the image becomes present.
func (f *Fake) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("PullImage", image.GetImage()); err != nil {
		return "", err
	}
	ref := image.GetImage()
	if f.images[ref] == nil {
		f.images[ref] = &runtimeapi.Image{Id: "sha256:" + ref, RepoTags: []string{ref}, Size: 1 << 20}
	}
	return f.images[ref].Id, nil
}

// RemoveImage implements Runtime.RemoveImage.
func (f *Fake) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("RemoveImage", image.GetImage()); err != nil {
		return err
	}
	if img := f.findImage(image.GetImage()); img != nil {
		delete(f.images, img.RepoTags[0])
	}
	return nil
}

// ImageFsInfo implements Runtime.ImageFsInfo with no usage.
func (f *Fake) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("ImageFsInfo", ""); err != nil {
		return nil, err
	}
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

// findImage finds an image by tag or ID. f.mu must be held.
func (f *Fake) findImage(ref string) *runtimeapi.Image {
	if img, ok := f.images[ref]; ok {
		return img
	}
	for _, img := range f.images {
		if img.Id == ref || strings.TrimPrefix(img.Id, "sha256:") == ref {
			return img
		}
	}
	return nil
}
