package proxy

import "orch/internal/iptsync"

// tables are the proxy's chains for iptsync: the per-service chains of
// the nat table go when their service does, and large nat inputs start
// with iptsync's cache hint.
func tables(rs *Ruleset) []iptsync.Table {
	return []iptsync.Table{
		{Name: "filter", Chains: toSync(rs.Filter)},
		{Name: "nat", Chains: toSync(rs.NAT), Stale: isServiceChain, CacheHint: true},
	}
}

// render makes the iptables-restore input (for --noflush) that moves the
// proxy's chains from prev to rs (iptsync.Render); existing are the nat
// chains iptables-save shows now, searched for stale per-service chains.
func render(rs *Ruleset, prev iptsync.Written, full bool, existing []string) iptsync.Text {
	ts := tables(rs)
	ts[1].Existing = existing
	return iptsync.Render(ts, prev, full)
}

func toSync(cs []Chain) []iptsync.Chain {
	out := make([]iptsync.Chain, len(cs))
	for i, c := range cs {
		out[i] = iptsync.Chain(c)
	}
	return out
}
