package containerd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
)

// gcRootLabel keeps a snapshot from containerd's garbage collection while
// no container or lease refers to it.
const gcRootLabel = "containerd.io/gc.root"

// MountImage mounts at target a read-only view of the image ref (a name or
// the ID the CRI plugin knows it by), unpacked for Snapshotter if it is
// not yet: the file system of an image volume. key names the view; a view
// that exists already is mounted again. The view stays until
// RemoveImageViews removes it.
func (s *Store) MountImage(ctx context.Context, ref, key, target string) error {
	ctx = namespaces.WithNamespace(ctx, Namespace)
	img, err := s.client.GetImage(ctx, ref)
	if err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	unpacked, err := img.IsUnpacked(ctx, Snapshotter)
	if err == nil && !unpacked {
		err = img.Unpack(ctx, Snapshotter)
	}
	if err != nil {
		return fmt.Errorf("unpack image %q: %w", ref, err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return fmt.Errorf("layers of image %q: %w", ref, err)
	}
	sn := s.client.SnapshotService(Snapshotter)
	mounts, err := sn.View(ctx, key, identity.ChainID(diffIDs).String(),
		snapshots.WithLabels(map[string]string{gcRootLabel: time.Now().UTC().Format(time.RFC3339)}))
	if errdefs.IsAlreadyExists(err) {
		mounts, err = sn.Mounts(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("view of image %q: %w", ref, err)
	}
	if err := mount.All(readOnly(mounts), target); err != nil {
		return fmt.Errorf("mount image %q at %s: %w", ref, target, err)
	}
	return nil
}

// readOnly adds "ro" to bind mounts (a view of a one-layer image is a bind
// mount of the layer; an overlay of lower directories alone is read-only
// already).
func readOnly(mounts []mount.Mount) []mount.Mount {
	out := make([]mount.Mount, len(mounts))
	for i, m := range mounts {
		m.Options = append([]string(nil), m.Options...)
		if m.Type == "bind" && !slices.Contains(m.Options, "ro") {
			m.Options = append(m.Options, "ro")
		}
		out[i] = m
	}
	return out
}

// ImageViews are the keys of the image views that start with prefix.
func (s *Store) ImageViews(ctx context.Context, prefix string) ([]string, error) {
	ctx = namespaces.WithNamespace(ctx, Namespace)
	var keys []string
	err := s.client.SnapshotService(Snapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindView && strings.HasPrefix(info.Name, prefix) {
			keys = append(keys, info.Name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list image views: %w", err)
	}
	return keys, nil
}

// RemoveImageViews removes the image views whose keys start with prefix;
// their mounts must be gone.
func (s *Store) RemoveImageViews(ctx context.Context, prefix string) error {
	keys, err := s.ImageViews(ctx, prefix)
	if err != nil {
		return err
	}
	ctx = namespaces.WithNamespace(ctx, Namespace)
	sn := s.client.SnapshotService(Snapshotter)
	var errs []error
	for _, key := range keys {
		if err := sn.Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image view %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}
