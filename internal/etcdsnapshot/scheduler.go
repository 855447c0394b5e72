package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultSchedule and DefaultRetention are the defaults of
// --etcd-snapshot-schedule-cron and --etcd-snapshot-retention.
const (
	DefaultSchedule  = "0 */12 * * *"
	DefaultRetention = 5
)

// SchedulerConfig configures scheduled snapshots.
type SchedulerConfig struct {
	// Spec is a standard 5-field cron spec (--etcd-snapshot-schedule-cron);
	// empty disables scheduled snapshots.
	Spec string
	// Retention is how many scheduled snapshots of this node to keep
	// (--etcd-snapshot-retention); at least 1.
	Retention int
	// Dir is the snapshot directory (--etcd-snapshot-dir).
	Dir string
	// Name is the snapshot name prefix; empty means DefaultName.
	Name string
	// NodeName goes into each file name.
	NodeName string
	// Client returns the etcd client, or nil while etcd is not serving.
	Client func() *clientv3.Client
	// Log receives one line per snapshot and per failure.
	Log *slog.Logger

	// Now and After replace the clock in tests (default time.Now and time.After).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Scheduler takes a snapshot at each time of its cron schedule and then
// deletes this node's oldest ones beyond the retention.
type Scheduler struct {
	cfg      SchedulerConfig
	schedule cron.Schedule // nil: disabled
}

// NewScheduler checks the configuration; errors name the flag at fault.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	s := &Scheduler{cfg: cfg}
	if cfg.Spec != "" {
		sched, err := cron.ParseStandard(cfg.Spec)
		if err != nil {
			return nil, fmt.Errorf("--etcd-snapshot-schedule-cron %q is not a cron schedule (five fields: minute hour day-of-month month day-of-week, e.g. %q): %w", cfg.Spec, DefaultSchedule, err)
		}
		s.schedule = sched
	}
	if s.schedule != nil && cfg.Retention < 1 {
		return nil, fmt.Errorf("--etcd-snapshot-retention %d: keep at least 1 snapshot", cfg.Retention)
	}
	if cfg.Dir == "" {
		return nil, errors.New("etcd snapshots: the snapshot directory (--etcd-snapshot-dir) is empty")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("etcd snapshots: the node name is empty")
	}
	if cfg.Client == nil {
		return nil, errors.New("etcd snapshots: no etcd client")
	}
	if s.cfg.Name == "" {
		s.cfg.Name = DefaultName
	}
	if s.cfg.Log == nil {
		s.cfg.Log = slog.New(slog.DiscardHandler)
	}
	if s.cfg.Now == nil {
		s.cfg.Now = time.Now
	}
	if s.cfg.After == nil {
		s.cfg.After = time.After
	}
	return s, nil
}

// Run takes snapshots on schedule until ctx ends. A failed snapshot is
// logged and the next one tried on schedule; Run returns nil when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.schedule == nil {
		s.cfg.Log.Info("scheduled etcd snapshots are disabled (--etcd-snapshot-schedule-cron is empty)")
		<-ctx.Done()
		return nil
	}
	s.cfg.Log.Info("scheduled etcd snapshots", "schedule", s.cfg.Spec, "retention", s.cfg.Retention, "dir", s.cfg.Dir)
	for {
		now := s.cfg.Now()
		next := s.schedule.Next(now)
		if next.IsZero() {
			s.cfg.Log.Warn("the etcd snapshot schedule never fires again", "schedule", s.cfg.Spec)
			<-ctx.Done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.After(next.Sub(now)):
		}
		if _, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("scheduled etcd snapshot failed; the next one is tried on schedule", "err", err)
		}
	}
}

// RunOnce takes one snapshot now and prunes this node's snapshots of the
// scheduler's name to the retention.
func (s *Scheduler) RunOnce(ctx context.Context) (Snapshot, error) {
	client := s.cfg.Client()
	if client == nil {
		return Snapshot{}, errors.New("etcd is not serving yet")
	}
	snap, err := Save(ctx, client, s.cfg.Dir, s.cfg.Name, s.cfg.NodeName, s.cfg.Now())
	if err != nil {
		return Snapshot{}, err
	}
	s.cfg.Log.Info("saved etcd snapshot", "path", snap.Path, "size", snap.Size)
	pruned, err := Prune(s.cfg.Dir, s.cfg.Name+"-"+s.cfg.NodeName, s.cfg.Retention)
	for _, p := range pruned {
		s.cfg.Log.Info("pruned etcd snapshot", "path", p.Path)
	}
	if err != nil {
		return snap, fmt.Errorf("prune etcd snapshots: %w", err)
	}
	return snap, nil
}
