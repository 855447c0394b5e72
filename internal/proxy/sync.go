package proxy

import (
	"fmt"
	"time"

	"orch/internal/iptsync"
)

// syncer turns one Input into rules in the kernel. It keeps what it last
// wrote, so that a partial sync writes only the chains that changed. It is
// not safe for concurrent use.
type syncer struct {
	w              ruleWriter
	ct             conntrackCleaner // nil: no conntrack cleanup
	fullSyncPeriod time.Duration

	prev     iptsync.Written // nil until the first successful sync
	udp      udpState
	needFull bool
	lastFull time.Time
	// jumpsDue asks the next sync to check the jump rules even when it is
	// partial. A missing jump means something flushed the tables (a
	// firewall reload), and maybe the proxy's own chains with them, which
	// a partial sync would not notice: the sync becomes a full one.
	jumpsDue bool
}

// syncResult describes one sync, for logs, tests and benchmarks.
type syncResult struct {
	Full             bool
	ServicePorts     int
	Endpoints        int
	Rules            int // rules in the iptables-restore input
	ChainsWritten    int // chains written, fixed and per-service
	ChainsDeleted    int
	ConntrackDeleted uint
}

// sync writes the rules for in. A full sync happens on the first call,
// after any error, when a jump rule had to be put back, and when the
// full-sync period has passed since the last one; it (re)inserts the jump
// rules, rewrites every chain and deletes stale per-service chains found by
// iptables-save. A partial sync with nothing to change runs no command.
func (s *syncer) sync(now time.Time, in Input) (syncResult, error) {
	full := s.prev == nil || s.needFull || now.Sub(s.lastFull) >= s.fullSyncPeriod
	s.needFull = true // until this sync succeeds
	var existing []string
	if full || s.jumpsDue {
		repaired, err := s.w.EnsureJumps()
		if err != nil {
			return syncResult{Full: full}, err
		}
		full = full || repaired
		s.jumpsDue = false
	}
	res := syncResult{Full: full}
	if full {
		var err error
		if existing, err = s.w.Chains("nat"); err != nil {
			return res, err
		}
	}
	rs := Build(in)
	rt := render(rs, s.prev, full, existing)
	res.ServicePorts, res.Endpoints, res.Rules = rs.ServicePorts, rs.Endpoints, rt.Rules
	res.ChainsWritten, res.ChainsDeleted = rt.Changed, len(rt.Deleted)
	if len(rt.Data) > 0 {
		if err := s.w.Restore(rt.Data); err != nil {
			return res, err
		}
	}
	s.prev, s.needFull = rt.Next, false
	if full {
		s.lastFull = now
	}
	if f := staleFilter(s.udp, rs.UDP); f != nil && s.ct != nil {
		n, err := s.ct.DeleteFlows(f)
		if err != nil {
			// Keep the old UDP state: the next sync tries these again.
			return res, fmt.Errorf("proxy: rules are written but deleting stale UDP conntrack entries of %s failed: %w", f, err)
		}
		res.ConntrackDeleted = n
	}
	s.udp = rs.UDP
	return res, nil
}
