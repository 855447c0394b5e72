package imagegc

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/cri"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// setup is a fake runtime with images a…f of 10 MB each, a container
// using "used", and a collector whose file system is 100 MB with
// available bytes as the test sets them.
func setup(t *testing.T, available *uint64, now *time.Time) (*cri.Fake, *Manager, *record.FakeRecorder) {
	t.Helper()
	rt := cri.NewFake()
	for _, ref := range []string{"used", "old", "recent", "kept", "pinned", "other"} {
		rt.SetImage(ref, 10_000_000, ref == "pinned")
	}
	ctx := context.Background()
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u", Namespace: "n"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image: &runtimeapi.ImageSpec{Image: "used"}}, nil); err != nil {
		t.Fatal(err)
	}
	events := record.NewFakeRecorder(10)
	m := New(rt, Config{
		Usage: func() (uint64, uint64, error) { return 100_000_000, *available, nil },
		Keep:  func() []string { return []string{"kept"} },
		Now:   func() time.Time { return *now },
	}, events, &corev1.ObjectReference{Kind: "Node", Name: "n"}, quiet)
	return rt, m, events
}

func present(t *testing.T, rt *cri.Fake) []string {
	t.Helper()
	images, err := rt.ListImages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, img := range images {
		refs = append(refs, img.RepoTags[0])
	}
	slices.Sort(refs)
	return refs
}

func TestBelowHighThresholdRemovesNothing(t *testing.T) {
	available, now := uint64(16_000_000), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // 84% used
	rt, m, _ := setup(t, &available, &now)
	for range 2 {
		if err := m.GarbageCollect(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	if got := present(t, rt); len(got) != 6 {
		t.Errorf("images %v, want all six", got)
	}
}

func TestRemovesLeastRecentlyUsedDownToLowThreshold(t *testing.T) {
	available, now := uint64(10_000_000), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // 90% used
	rt, m, _ := setup(t, &available, &now)
	if err := m.GarbageCollect(context.Background()); err == nil {
		t.Fatal("no error although every image is younger than MinAge, so nothing could be freed")
	}
	if got := present(t, rt); len(got) != 6 {
		t.Fatalf("images %v removed before MinAge", got)
	}
	// "recent" gets used later than "old" and "other" were seen.
	ctx := context.Background()
	now = now.Add(time.Minute)
	sbs, _ := rt.ListPodSandbox(ctx, nil)
	if _, err := rt.CreateContainer(ctx, sbs[0].Id, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "r"},
		Image: &runtimeapi.ImageSpec{Image: "recent"}}, nil); err != nil {
		t.Fatal(err)
	}
	available = 100_000_000 // not collected this time, but "recent" is seen in use
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	containers, _ := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: nil})
	for _, c := range containers {
		if c.Metadata.Name == "r" {
			if err := rt.RemoveContainer(ctx, c.Id); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 90% used: 10 MB must go to reach 80%; "old" and "other" were never
	// used, so one of them goes first (the first detected, by name order
	// here both at once: either is fine), never "used", "kept" or "pinned".
	now = now.Add(5 * time.Minute)
	available = 10_000_000
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	got := present(t, rt)
	if len(got) != 5 || !slices.Contains(got, "recent") || !slices.Contains(got, "used") || !slices.Contains(got, "kept") || !slices.Contains(got, "pinned") {
		t.Fatalf("images %v, want one never-used image removed", got)
	}
	// Full: 20 MB to free, which are the other never-used image and then
	// "recent", the least recently used of what is left.
	available = 0
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got := present(t, rt); !slices.Equal(got, []string{"kept", "pinned", "used"}) {
		t.Errorf("images %v, want kept, pinned and used left", got)
	}
}

func TestNotEnoughToFreeSaysSo(t *testing.T) {
	available, now := uint64(0), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, m, events := setup(t, &available, &now)
	if err := m.GarbageCollect(context.Background()); err == nil {
		t.Fatal("no error although nothing could be freed")
	}
	select {
	case e := <-events.Events:
		want := "Warning FreeDiskSpaceFailed Failed to garbage collect required amount of images. Attempted to free 20000000 bytes, but only found 0 bytes eligible to free."
		if e != want {
			t.Errorf("event %q, want %q", e, want)
		}
	default:
		t.Error("no FreeDiskSpaceFailed event")
	}
}
