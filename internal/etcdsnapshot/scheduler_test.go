package etcdsnapshot_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"

	"orch/internal/envtest"
	"orch/internal/etcdsnapshot"
)

func TestNewSchedulerRejectsBadFlags(t *testing.T) {
	client := func() *clientv3.Client { return nil }
	for _, tc := range []struct {
		cfg  etcdsnapshot.SchedulerConfig
		want string
	}{
		{etcdsnapshot.SchedulerConfig{Spec: "every noon", Retention: 5, Dir: "d", NodeName: "n", Client: client}, "--etcd-snapshot-schedule-cron"},
		{etcdsnapshot.SchedulerConfig{Spec: "0 */12 * * * *", Retention: 5, Dir: "d", NodeName: "n", Client: client}, "--etcd-snapshot-schedule-cron"},
		{etcdsnapshot.SchedulerConfig{Spec: "0 */12 * * *", Retention: 0, Dir: "d", NodeName: "n", Client: client}, "--etcd-snapshot-retention"},
		{etcdsnapshot.SchedulerConfig{Spec: "0 */12 * * *", Retention: 5, NodeName: "n", Client: client}, "--etcd-snapshot-dir"},
	} {
		if _, err := etcdsnapshot.NewScheduler(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewScheduler(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

// fakeClock hands each wait of the scheduler to the test, which advances
// the time by it and fires.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits chan time.Duration
	fire  chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.waits <- d
	return c.fire
}

// step waits for the scheduler's next wait, checks its length, advances
// the clock by it and fires.
func (c *fakeClock) step(t *testing.T, want time.Duration) {
	t.Helper()
	select {
	case d := <-c.waits:
		if d != want {
			t.Fatalf("scheduler waits %v, want %v", d, want)
		}
		c.mu.Lock()
		c.now = c.now.Add(d)
		c.mu.Unlock()
		c.fire <- c.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("the scheduler did not wait for its next time")
	}
}

func TestSchedulerSnapshotsOnScheduleAndPrunes(t *testing.T) {
	m := startEtcd(t, filepath.Join(t.TempDir(), "etcd"), "orch", "http://"+envtest.FreeAddr(t))
	// The server passes its in-process client; use one here too.
	client := v3client.New(m.etcd.Server)
	t.Cleanup(func() { client.Close() })
	put(t, client, "/a", "b")
	dir := t.TempDir()
	touch(t, dir, "etcd-snapshot-other-1.db", "on-demand-n1-1.db") // not this node's scheduled ones

	start := time.Date(2026, 1, 1, 11, 59, 30, 0, time.UTC)
	clock := &fakeClock{now: start, waits: make(chan time.Duration), fire: make(chan time.Time)}
	s, err := etcdsnapshot.NewScheduler(etcdsnapshot.SchedulerConfig{
		Spec: etcdsnapshot.DefaultSchedule, Retention: 2, Dir: dir, NodeName: "n1",
		Client: func() *clientv3.Client { return client }, Log: quiet,
		Now: clock.Now, After: clock.After,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	clock.step(t, 30*time.Second) // to 12:00
	clock.step(t, 12*time.Hour)   // to 00:00 (the first snapshot is taken before this wait)
	clock.step(t, 12*time.Hour)   // to 12:00 next day
	select {                      // the third snapshot and its prune are done once it waits again
	case <-clock.waits:
	case <-time.After(30 * time.Second):
		t.Fatal("the scheduler did not wait after its third snapshot")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v when its context ended, want nil", err)
	}

	at := func(d time.Duration) string {
		return fmt.Sprintf("etcd-snapshot-n1-%d.db", start.Add(30*time.Second+d).Unix())
	}
	want := []string{"etcd-snapshot-other-1.db", "on-demand-n1-1.db", at(12 * time.Hour), at(24 * time.Hour)}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("snapshots = %v, want %v", got, want)
	}
	if err := etcdsnapshot.Verify(filepath.Join(dir, at(24*time.Hour))); err != nil {
		t.Errorf("a scheduled snapshot does not verify: %v", err)
	}
}

func TestSchedulerKeepsGoingWhenEtcdIsDown(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), waits: make(chan time.Duration), fire: make(chan time.Time)}
	var calls int
	s, err := etcdsnapshot.NewScheduler(etcdsnapshot.SchedulerConfig{
		Spec: "*/5 * * * *", Retention: 1, Dir: dir, NodeName: "n1",
		Client: func() *clientv3.Client { calls++; return nil }, Log: quiet,
		Now: clock.Now, After: clock.After,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunOnce(context.Background()); err == nil {
		t.Fatal("RunOnce without etcd succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	clock.step(t, 5*time.Minute)
	clock.step(t, 5*time.Minute) // a failed snapshot does not end Run
	<-clock.waits
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if calls != 3 {
		t.Errorf("the client was asked for %d times, want 3", calls)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Errorf("snapshots = %v, want none", got)
	}
}

func TestSchedulerDisabledByEmptySpec(t *testing.T) {
	s, err := etcdsnapshot.NewScheduler(etcdsnapshot.SchedulerConfig{Retention: 5, Dir: t.TempDir(), NodeName: "n",
		Client: func() *clientv3.Client { t.Error("a disabled scheduler asked for the client"); return nil },
		After:  func(time.Duration) <-chan time.Time { t.Error("a disabled scheduler waits for a time"); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
}
