package proxy

import "orch/internal/iptsync"

// render makes the iptables-restore input (for --noflush) that moves the
// proxy's chains from prev to rs (iptsync.Render). With full set, every
// chain is written and existing (the nat chains iptables-save shows now)
// is searched for stale per-service chains too; otherwise only the chains
// that differ from prev are written. The nat table, which holds a chain
// per service and endpoint, starts large inputs with iptsync's cache hint.
func render(rs *Ruleset, prev iptsync.Written, full bool, existing []string) iptsync.Text {
	return iptsync.Render([]iptsync.Table{
		{Name: "filter", Chains: toSync(rs.Filter)},
		{Name: "nat", Chains: toSync(rs.NAT), Stale: isServiceChain, Existing: existing, CacheHint: true},
	}, prev, full)
}

func toSync(cs []Chain) []iptsync.Chain {
	out := make([]iptsync.Chain, len(cs))
	for i, c := range cs {
		out[i] = iptsync.Chain(c)
	}
	return out
}
