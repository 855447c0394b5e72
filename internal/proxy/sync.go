package proxy

import (
	"fmt"
	"time"

	"orch/internal/iptsync"
)

// syncer turns one Input into rules in the kernel, through iptsync's
// Syncer (partial syncs, full ones on the first call, after any error, when
// a jump rule had to be put back and every full-sync period), and deletes
// stale UDP conntrack entries. It is not safe for concurrent use.
type syncer struct {
	iptsync.Syncer
	ct  conntrackCleaner // nil: no conntrack cleanup
	udp udpState
}

func newSyncer(w iptsync.Writer, ct conntrackCleaner, fullSyncPeriod time.Duration) *syncer {
	return &syncer{Syncer: iptsync.Syncer{W: w, FullSyncPeriod: fullSyncPeriod}, ct: ct}
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

// sync writes the rules for in. A full sync rewrites every chain and
// deletes stale per-service chains found by iptables-save; a partial sync
// with nothing to change runs no command.
func (s *syncer) sync(now time.Time, in Input) (syncResult, error) {
	rs := Build(in)
	rt, full, err := s.Sync(now, tables(rs))
	res := syncResult{Full: full, ServicePorts: rs.ServicePorts, Endpoints: rs.Endpoints,
		Rules: rt.Rules, ChainsWritten: rt.Changed, ChainsDeleted: len(rt.Deleted)}
	if err != nil {
		return res, err
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
