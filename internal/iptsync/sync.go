package iptsync

import "time"

// Writer is what a Syncer needs of iptables: Driver, or a test's fake.
type Writer interface {
	// EnsureJumps makes the built-in chains jump to the caller's chains.
	// It reports whether a jump or chain was missing and had to be put
	// back.
	EnsureJumps() (repaired bool, err error)
	// Restore applies iptables-restore input without flushing other chains.
	Restore(data []byte) error
	// Chains lists the chains of a table.
	Chains(table string) ([]string, error)
}

// Driver is the real Writer of one family: go-iptables for the jump
// rules, (ip6)iptables-restore and (ip6)iptables-save for the rest.
type Driver struct {
	*Exec
	Jumps *Jumps
}

var _ Writer = (*Driver)(nil)

// NewFamilyDriver finds the family's iptables for who (leading its
// errors) and its jumps; with first, each jump must stay the first rule of
// its chain.
func NewFamilyDriver(f Family, who string, jumps []Jump, first bool) (*Driver, error) {
	js, err := NewJumps(f, who, jumps, first)
	if err != nil {
		return nil, err
	}
	e, err := NewExec(f, who)
	if err != nil {
		return nil, err
	}
	return &Driver{Exec: e, Jumps: js}, nil
}

// EnsureJumps is Jumps.Ensure.
func (d *Driver) EnsureJumps() (bool, error) { return d.Jumps.Ensure() }

// Syncer writes tables through W, keeping what it last wrote so that a
// partial sync writes only the chains that changed. A full sync happens on
// the first call, after any error, when a jump rule had to be put back,
// and when FullSyncPeriod has passed since the last one: it rewrites every
// chain and deletes stale chains found by listing the tables. It is not
// safe for concurrent use.
type Syncer struct {
	W              Writer
	FullSyncPeriod time.Duration
	// JumpsDue asks the next sync to check the jump rules even when it
	// is partial. A missing jump means something flushed the tables (a
	// firewall reload), and maybe the caller's chains with them, which a
	// partial sync would not notice: the sync becomes a full one.
	JumpsDue bool

	prev     Written // nil until the first successful sync
	needFull bool
	lastFull time.Time
}

// Sync writes tables; what it wrote and whether the sync was full come
// back, also with an error (when the restore failed).
func (s *Syncer) Sync(now time.Time, tables []Table) (Text, bool, error) {
	full := s.prev == nil || s.needFull || now.Sub(s.lastFull) >= s.FullSyncPeriod
	s.needFull = true // until this sync succeeds
	if full || s.JumpsDue {
		repaired, err := s.W.EnsureJumps()
		if err != nil {
			return Text{}, full, err
		}
		full = full || repaired
		s.JumpsDue = false
	}
	if full {
		for i := range tables {
			if tables[i].Stale == nil {
				continue
			}
			existing, err := s.W.Chains(tables[i].Name)
			if err != nil {
				return Text{}, full, err
			}
			tables[i].Existing = existing
		}
	}
	text := Render(tables, s.prev, full)
	if len(text.Data) > 0 {
		if err := s.W.Restore(text.Data); err != nil {
			return text, full, err
		}
	}
	s.prev, s.needFull = text.Next, false
	if full {
		s.lastFull = now
	}
	return text, full, nil
}

// NeedFull makes the next sync a full one (after a failure the caller
// saw elsewhere).
func (s *Syncer) NeedFull() { s.needFull = true }
