// Package imagegc is the kubelet's image garbage collection, as
// upstream's image GC manager: every Period it notes which images the
// runtime has and which any container (running or exited) uses; when the
// image file system is HighThresholdPercent full, it removes unused
// images, least recently used first, until usage is back down to
// LowThresholdPercent. Images younger than MinAge, images in use, pinned
// images, and the
// images Keep names (the air-gap imports and the pause image, which
// containerd 1.6 does not pin) are never removed.
//
//	m := imagegc.New(runtime, imagegc.Config{Usage: usage, Keep: importer.Images}, recorder, nodeRef, log)
//	err := m.Start(ctx) // blocks until ctx ends
package imagegc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Upstream's defaults (KubeletConfiguration imageGC*).
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	DefaultPeriod               = 5 * time.Minute
)

// Runtime is what the collector needs of the container runtime.
type Runtime interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// Config tunes the collector; zero fields take upstream's defaults.
type Config struct {
	HighThresholdPercent int
	LowThresholdPercent  int
	MinAge               time.Duration
	Period               time.Duration
	// Usage reports the image file system's capacity and available bytes.
	Usage func() (capacity, available uint64, err error)
	// Keep names the images never removed (by tag or ID).
	Keep func() []string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Manager collects unused images.
type Manager struct {
	rt       Runtime
	cfg      Config
	recorder record.EventRecorder
	node     *corev1.ObjectReference
	log      *slog.Logger

	mu     sync.Mutex
	images map[string]*imageRecord // by image ID
}

// imageRecord is what the collector knows of one image.
type imageRecord struct {
	firstDetected time.Time
	lastUsed      time.Time
	size          uint64
	tags          []string
	pinned        bool
}

// New returns a collector; events go to node through recorder.
func New(rt Runtime, cfg Config, recorder record.EventRecorder, node *corev1.ObjectReference, log *slog.Logger) *Manager {
	if cfg.HighThresholdPercent == 0 {
		cfg.HighThresholdPercent = DefaultHighThresholdPercent
	}
	if cfg.LowThresholdPercent == 0 {
		cfg.LowThresholdPercent = DefaultLowThresholdPercent
	}
	if cfg.MinAge == 0 {
		cfg.MinAge = DefaultMinAge
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Keep == nil {
		cfg.Keep = func() []string { return nil }
	}
	return &Manager{rt: rt, cfg: cfg, recorder: recorder, node: node, log: log, images: map[string]*imageRecord{}}
}

// Start collects every Period until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Period)
	defer t.Stop()
	for {
		if err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("image garbage collection", "err", err)
			m.recorder.Event(m.node, corev1.EventTypeWarning, "ImageGCFailed", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// GarbageCollect notes the images in use and, when the image file system
// is past the high threshold, frees space down to the low one.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	now := m.cfg.Now()
	inUse, err := m.detect(ctx, now)
	if err != nil {
		return err
	}
	capacity, available, err := m.cfg.Usage()
	if err != nil {
		return fmt.Errorf("read the image file system's usage: %w", err)
	}
	if capacity == 0 {
		return fmt.Errorf("the image file system reports a capacity of 0 bytes")
	}
	usage := 100 - int(available*100/capacity)
	if usage < m.cfg.HighThresholdPercent {
		return nil
	}
	toFree := int64(capacity)*int64(100-m.cfg.LowThresholdPercent)/100 - int64(available)
	m.log.Info("image file system over the high threshold: removing unused images", "usage%", usage,
		"high%", m.cfg.HighThresholdPercent, "bytesToFree", toFree)
	freed, err := m.freeSpace(ctx, toFree, inUse, now)
	if err != nil {
		return err
	}
	if freed < toFree {
		msg := fmt.Sprintf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", toFree, freed)
		m.recorder.Event(m.node, corev1.EventTypeWarning, "FreeDiskSpaceFailed", msg)
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// detect records the runtime's images, forgets the gone ones, and returns
// the IDs of those any container uses (their lastUsed becomes now).
func (m *Manager) detect(ctx context.Context, now time.Time) (map[string]bool, error) {
	images, err := m.rt.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	containers, err := m.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range containers {
		used[c.ImageRef] = true
		used[c.GetImage().GetImage()] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	inUse := map[string]bool{}
	seen := map[string]bool{}
	for _, img := range images {
		seen[img.Id] = true
		r := m.images[img.Id]
		if r == nil {
			r = &imageRecord{firstDetected: now}
			m.images[img.Id] = r
		}
		r.size, r.tags, r.pinned = img.Size, img.RepoTags, img.Pinned
		if used[img.Id] || slices.ContainsFunc(img.RepoTags, func(tag string) bool { return used[tag] }) ||
			slices.ContainsFunc(img.RepoDigests, func(d string) bool { return used[d] }) {
			inUse[img.Id] = true
			r.lastUsed = now
		}
	}
	for id := range m.images {
		if !seen[id] {
			delete(m.images, id)
		}
	}
	return inUse, nil
}

// freeSpace removes unused, unkept images older than MinAge, least
// recently used first, until toFree bytes are freed; it returns how many
// were.
func (m *Manager) freeSpace(ctx context.Context, toFree int64, inUse map[string]bool, now time.Time) (int64, error) {
	keep := map[string]bool{}
	for _, name := range m.cfg.Keep() {
		keep[name] = true
	}
	type candidate struct {
		id string
		r  imageRecord
	}
	var candidates []candidate
	m.mu.Lock()
	for id, r := range m.images {
		if inUse[id] || r.pinned || keep[id] || slices.ContainsFunc(r.tags, func(t string) bool { return keep[t] }) || now.Sub(r.firstDetected) < m.cfg.MinAge {
			continue
		}
		candidates = append(candidates, candidate{id, *r})
	}
	m.mu.Unlock()
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i].r, candidates[j].r
		if !a.lastUsed.Equal(b.lastUsed) {
			return a.lastUsed.Before(b.lastUsed)
		}
		return a.firstDetected.Before(b.firstDetected)
	})
	var freed int64
	for _, c := range candidates {
		if freed >= toFree {
			break
		}
		m.log.Info("removing an unused image", "image", c.id, "tags", c.r.tags, "size", c.r.size)
		if err := m.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: c.id}); err != nil {
			return freed, fmt.Errorf("remove image %s: %w", c.id, err)
		}
		m.mu.Lock()
		delete(m.images, c.id)
		m.mu.Unlock()
		freed += int64(c.r.size)
	}
	return freed, nil
}
