package proxy

import (
	"time"

	"orch/internal/iptsync"
)

// syncer turns one Input into rules in the kernel, through iptsync's
// Syncer (partial syncs, full ones on the first call, after any error, when
// a jump rule had to be put back and every full-sync period), and deletes
// stale UDP conntrack entries. It is not safe for concurrent use.
type syncer struct {
	iptsync.Syncer
	udp udpCleaner
}

var _ modeSyncer = (*syncer)(nil)

func newSyncer(w iptsync.Writer, ct conntrackCleaner, fullSyncPeriod time.Duration) *syncer {
	return &syncer{Syncer: iptsync.Syncer{W: w, FullSyncPeriod: fullSyncPeriod}, udp: udpCleaner{ct: ct}}
}

// periodic has the next sync check the jump rules.
func (s *syncer) periodic() { s.JumpsDue = true }

// syncResult describes one sync, for logs, tests and benchmarks.
type syncResult struct {
	Full             bool
	ServicePorts     int
	Endpoints        int
	Rules            int // rules in the iptables-restore input
	ChainsWritten    int // chains written, fixed and per-service
	ChainsDeleted    int
	ConntrackDeleted uint
	// Again, when positive, asks for another sync that soon (nftables
	// mode: flushed chains wait to be deleted).
	Again time.Duration
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
	n, err := s.udp.synced(rs.UDP)
	res.ConntrackDeleted = n
	if err != nil {
		return res, err
	}
	return res, nil
}
