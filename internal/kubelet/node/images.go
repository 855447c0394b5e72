package node

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MaxImages is how many images the node reports in status.images,
// upstream's default --node-status-max-images.
const MaxImages = 50

// MaxNamesPerImage is how many names of one image the node reports,
// upstream's MaxNamesPerImageInNodeStatus.
const MaxNamesPerImage = 5

// ImageLister lists the runtime's images (CRI ListImages).
type ImageLister interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// Images is the status.images of a node whose runtime has images, by
// upstream's rule: the max largest (ties broken by ID, descending), each
// with its repo digests then its repo tags, at most MaxNamesPerImage of
// them, and its size in bytes. max < 0 means no limit.
func Images(images []*runtimeapi.Image, max int) []corev1.ContainerImage {
	sorted := slices.Clone(images)
	slices.SortStableFunc(sorted, func(a, b *runtimeapi.Image) int {
		if c := cmp.Compare(b.GetSize(), a.GetSize()); c != 0 {
			return c
		}
		return cmp.Compare(b.GetId(), a.GetId())
	})
	if max >= 0 && len(sorted) > max {
		sorted = sorted[:max]
	}
	out := make([]corev1.ContainerImage, 0, len(sorted))
	for _, img := range sorted {
		names := append(slices.Clone(img.GetRepoDigests()), img.GetRepoTags()...)
		if len(names) > MaxNamesPerImage {
			names = names[:MaxNamesPerImage]
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out
}
