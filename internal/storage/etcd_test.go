package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"orch/internal/envtest"
	"orch/internal/storage"
	"orch/internal/storage/storagetest"
)

// startEtcd runs a real embedded etcd in a temporary directory.
func startEtcd(t *testing.T) *storage.EmbeddedEtcd {
	t.Helper()
	e, err := storage.StartEtcd(storage.EtcdConfig{
		Dir: t.TempDir(), Name: "test", UnsafeNoFsync: true,
		ClientURL: "http://" + envtest.FreeAddr(t), PeerURL: "http://" + envtest.FreeAddr(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestEtcdConformance(t *testing.T) {
	storagetest.Run(t, storage.NewEtcd(startEtcd(t).Client))
}

func TestEtcdCompactedWatchAndList(t *testing.T) {
	ctx := context.Background()
	s := storage.NewEtcd(startEtcd(t).Client)
	rev, _ := s.Create(ctx, "/c/a", []byte("1"))
	rev2, _ := s.Update(ctx, "/c/a", []byte("2"), rev)
	if err := s.Compact(ctx, rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "/c/", storage.ListOptions{Revision: rev}); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("list at a compacted revision: %v, want ErrCompacted", err)
	}
	ev := <-s.Watch(ctx, "/c/", rev-1)
	if ev.Type != storage.Error || !errors.Is(ev.Err, storage.ErrCompacted) {
		t.Fatalf("watch from a compacted revision: %+v, want an ErrCompacted error event", ev)
	}
	// Compacted up to rev2: a watch after rev2-1 needs only rev2 onwards.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.Watch(wctx, "/c/", rev2-1)
	if _, err := s.Update(ctx, "/c/a", []byte("3"), rev2); err != nil {
		t.Fatal(err)
	}
	if ev := <-w; ev.Type != storage.Modified || ev.KV.Revision != rev2 {
		t.Fatalf("watch after the revision just before the compaction: %+v, want the change at %d", ev, rev2)
	}
}

func decodeString(kv storage.KeyValue) (any, error) { return string(kv.Value), nil }

func newCache(t *testing.T, s storage.Interface, history int) (*storage.Cache, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := storage.NewCache(s, "/cache/", decodeString, history, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go c.Start(ctx)
	return c, ctx
}

func TestCacheListAndWatch(t *testing.T) {
	s := storage.NewEtcd(startEtcd(t).Client)
	ctx := context.Background()
	r0, _ := s.Create(ctx, "/cache/a", []byte("a0"))
	c, cctx := newCache(t, s, 3)

	objs, rev, err := c.List(cctx, r0, "/cache/")
	if err != nil || len(objs) != 1 || objs[0].Value != "a0" || rev < r0 {
		t.Fatalf("list = %+v at %d, %v", objs, rev, err)
	}

	initial, err := c.Watch(cctx, storage.WatchOptions{Initial: true, InitialBookmark: true})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-initial; ev.Type != storage.Added || ev.Value != "a0" {
		t.Fatalf("initial event = %+v", ev)
	}
	if ev := <-initial; ev.Type != storage.Bookmark || ev.Revision != rev {
		t.Fatalf("initial bookmark = %+v, want revision %d", ev, rev)
	}
	r1, _ := s.Create(ctx, "/cache/b", []byte("b1"))
	if ev := <-initial; ev.Type != storage.Added || ev.Value != "b1" || ev.Revision != r1 {
		t.Fatalf("live event = %+v", ev)
	}

	// Resuming from r0 replays what happened after it.
	resumed, err := c.Watch(cctx, storage.WatchOptions{Revision: r0})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-resumed; ev.Type != storage.Added || ev.Value != "b1" {
		t.Fatalf("replayed event = %+v", ev)
	}
	r2, _ := s.Update(ctx, "/cache/b", []byte("b2"), r1)
	if ev := <-resumed; ev.Type != storage.Modified || ev.Value != "b2" || ev.Prev != "b1" || ev.Revision != r2 {
		t.Fatalf("modified event = %+v", ev)
	}
}

func TestCacheTooOldRevision(t *testing.T) {
	s := storage.NewEtcd(startEtcd(t).Client)
	ctx := context.Background()
	r0, _ := s.Create(ctx, "/cache/x", []byte("0"))
	c, cctx := newCache(t, s, 2)
	var last int64
	for i := 0; i < 5; i++ {
		last, _ = s.Create(ctx, fmt.Sprintf("/cache/k%d", i), []byte("v"))
	}
	if _, _, err := c.List(cctx, last, "/cache/"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Watch(cctx, storage.WatchOptions{Revision: r0}); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch from before the kept history: %v, want ErrCompacted", err)
	}
	if _, err := c.Watch(cctx, storage.WatchOptions{Revision: last - 1}); err != nil {
		t.Fatalf("watch inside the kept history: %v", err)
	}
}

func TestCacheSlowWatcherIsEnded(t *testing.T) {
	s := storage.NewEtcd(startEtcd(t).Client)
	c, cctx := newCache(t, s, 10)
	ctx := context.Background()
	if _, _, err := c.List(cctx, 0, "/cache/"); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(cctx, storage.WatchOptions{Revision: c.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := 0; i < 1100; i++ {
		last, _ = s.Create(ctx, fmt.Sprintf("/cache/s%04d", i), []byte("v"))
	}
	if _, _, err := c.List(cctx, last, "/cache/"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	n := 0
	for {
		select {
		case _, ok := <-w:
			if !ok {
				if n >= 1100 {
					t.Fatalf("watcher got all %d events but was closed", n)
				}
				return
			}
			n++
		case <-timeout:
			t.Fatalf("a watcher that never read was not ended (got %d events)", n)
		}
	}
}

func TestCacheConsistentListOnQuietPrefix(t *testing.T) {
	s := storage.NewEtcd(startEtcd(t).Client)
	ctx := context.Background()
	s.Create(ctx, "/cache/a", []byte("a"))
	c, cctx := newCache(t, s, 10)
	// Writes elsewhere move the store's revision but not this prefix.
	for i := 0; i < 3; i++ {
		s.Create(ctx, fmt.Sprintf("/elsewhere/%d", i), []byte("x"))
	}
	current, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	objs, rev, err := c.List(cctx, current, "/cache/")
	if err != nil || len(objs) != 1 || rev < current {
		t.Fatalf("consistent list = %d objects at %d, %v; want 1 object at >= %d", len(objs), rev, err, current)
	}
}

// A watch opened at the store's current revision on another prefix (as a
// cache does right after its list, or a client resuming at "now") must
// not hold back the progress a quiet prefix's cache waits for: etcd drops
// progress requests on a stream with a watch that has not started yet.
func TestCacheProgressNotHeldBackByAnotherPrefix(t *testing.T) {
	s := storage.NewEtcd(startEtcd(t).Client)
	ctx := context.Background()
	c, cctx := newCache(t, s, 10)
	if _, _, err := c.List(cctx, 0, "/cache/"); err != nil { // the cache is filled
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/elsewhere/a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	current, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	registered := etcdWatchers(t)
	s.Watch(wctx, "/other/", current) // starts at current+1; nothing is written after
	envtest.EventuallyTrue(t, "etcd to register the watch", func() bool { return etcdWatchers(t) > registered })
	if _, rev, err := c.List(cctx, current, "/cache/"); err != nil || rev < current {
		t.Fatalf("consistent list of the quiet prefix: at %d, %v; want at >= %d", rev, err, current)
	}
}

// etcdWatchers is how many watches the embedded etcd servers of this
// process have registered (etcd's own gauge).
func etcdWatchers(t *testing.T) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "etcd_debugging_mvcc_watcher_total" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("etcd_debugging_mvcc_watcher_total is not registered")
	return 0
}
