package containerd

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"orch/internal/kubelet/images"
)

// Namespace is containerd's namespace for the images and containers of
// the CRI plugin.
const Namespace = "k8s.io"

// Snapshotter is the snapshotter the CRI plugin runs containers on (the
// config sets it), so images are unpacked for it.
const Snapshotter = "overlayfs"

// PinnedLabel marks an image that image garbage collection must keep. The
// CRI plugin of containerd 1.7 and later reports an image with this label as
// Pinned, and the kubelet's image GC skips pinned images. containerd 1.6
// does not know it (it pins nothing; CRI's Pinned is always false there), so
// orch's kubelet also keeps every image Importer.Images names. containerd
// itself never removes an image: its own GC only frees unreferenced content.
var PinnedLabel = map[string]string{"io.cri-containerd.pinned": "pinned"}

var _ ImageStore = (*Store)(nil)

// Builtins are the images inside the orch binary: the pause image (a
// multi-platform index; containerd unpacks this machine's platform).
func Builtins() []Builtin {
	return []Builtin{{Name: images.PauseRef, Write: func(w io.Writer) error { return images.WritePause(w) }}}
}

// Store imports images into containerd's k8s.io namespace.
type Store struct {
	client *client.Client
}

// NewStore connects to the containerd socket at address. The
// connection is lazy and survives containerd restarts.
func NewStore(address string) (*Store, error) {
	c, err := client.New(address, client.WithDefaultNamespace(Namespace))
	if err != nil {
		return nil, fmt.Errorf("containerd client for %s: %w", address, err)
	}
	return &Store{client: c}, nil
}

// Close closes the connection.
func (s *Store) Close() error { return s.client.Close() }

// Import stores the archive's images, labelled PinnedLabel, and unpacks
// them for Snapshotter.
func (s *Store) Import(ctx context.Context, archive io.Reader) ([]string, error) {
	ctx = namespaces.WithNamespace(ctx, Namespace)
	imgs, err := s.client.Import(ctx, archive, client.WithImageLabels(PinnedLabel))
	if err != nil {
		return nil, err
	}
	if len(imgs) == 0 {
		return nil, fmt.Errorf("the archive names no image (a docker-archive needs RepoTags in manifest.json, an OCI layout an org.opencontainers.image.ref.name annotation)")
	}
	var names []string
	for _, img := range imgs {
		if err := client.NewImage(s.client, img).Unpack(ctx, Snapshotter); err != nil {
			return nil, fmt.Errorf("unpack %q: %w", img.Name, err)
		}
		names = append(names, img.Name)
	}
	return names, nil
}

// Present reports whether all names exist and are unpacked for Snapshotter.
func (s *Store) Present(ctx context.Context, names []string) (bool, error) {
	ctx = namespaces.WithNamespace(ctx, Namespace)
	for _, name := range names {
		img, err := s.client.GetImage(ctx, name)
		if errdefs.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		unpacked, err := img.IsUnpacked(ctx, Snapshotter)
		if err != nil || !unpacked {
			return false, err
		}
	}
	return true, nil
}
