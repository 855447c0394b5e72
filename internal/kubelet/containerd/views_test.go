package containerd_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/containerd/containerdtest"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/images"
)

// An image volume's file system, against a real containerd: a view of an
// image (named by the ID CRI reports) mounted read-only, mounted again
// under the same key, and removed once unmounted.
func TestImageViewWithRealContainerd(t *testing.T) {
	dir, cfg, _, sup := containerdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := containerd.NewStore(cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var archive bytes.Buffer
	if err := images.Write(&archive, "registry.invalid/team/data:1", []images.File{{Path: "/data.json", Mode: 0o644, Data: []byte(`{"kitten.jpg": 1}`)}},
		images.Config{Arch: runtime.GOARCH, Cmd: []string{"/none"}}); err != nil {
		t.Fatal(err)
	}
	names, err := store.Import(ctx, &archive)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := cri.Connect(ctx, sup.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: names[0]}, false)
	if err != nil || st.GetImage() == nil {
		t.Fatalf("image status of %s: %v, %v", names[0], st, err)
	}

	const prefix = "orch-image-volume/pod-1/"
	targets := []string{filepath.Join(dir, "vol-a"), filepath.Join(dir, "vol-b")}
	for _, target := range targets {
		if err := os.MkdirAll(target, 0o750); err != nil {
			t.Fatal(err)
		}
		// The second mounts the view the first made.
		if err := store.MountImage(ctx, st.Image.Id, prefix+"data", target); err != nil {
			t.Fatal(err)
		}
		defer unix.Unmount(target, unix.MNT_DETACH)
		if data, err := os.ReadFile(filepath.Join(target, "data.json")); err != nil || string(data) != `{"kitten.jpg": 1}` {
			t.Errorf("data.json in %s: %q, %v", target, data, err)
		}
		if err := os.WriteFile(filepath.Join(target, "new"), nil, 0o644); !errors.Is(err, unix.EROFS) {
			t.Errorf("a write to the image volume at %s: %v, want EROFS", target, err)
		}
	}
	if keys, err := store.ImageViews(ctx, prefix); err != nil || len(keys) != 1 || keys[0] != prefix+"data" {
		t.Fatalf("views %v, %v; want the one", keys, err)
	}
	for _, target := range targets {
		if err := unix.Unmount(target, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.RemoveImageViews(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	if keys, err := store.ImageViews(ctx, prefix); err != nil || len(keys) != 0 {
		t.Errorf("views %v, %v after removing them", keys, err)
	}
	if err := store.MountImage(ctx, "registry.invalid/team/missing:1", prefix+"missing", targets[0]); err == nil {
		t.Error("a view of a missing image was mounted")
	}
}
