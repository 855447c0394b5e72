package proxy

import (
	"sort"
	"strings"

	"sigs.k8s.io/knftables"
)

// nftBaseChain is a chain the kernel's hooks call.
type nftBaseChain struct {
	name     string
	typ      knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
	rules    []string
}

// nftBaseChains are upstream's, with their jumps, in order, for the table
// of the family.
func nftBaseChains(ipv6 bool) []nftBaseChain {
	input := []string{"ct state new jump " + nftNodePortEPCheck, "ct state new jump " + nftServiceEPCheck}
	if !ipv6 {
		// What iptables mode's KUBE-FIREWALL does: a node that once ran
		// it keeps net.ipv4.conf.all.route_localnet=1, which would let
		// other hosts reach its loopback services. IPv6 never routes ::1.
		input = append([]string{`ip daddr 127.0.0.0/8 iifname != "lo" drop`}, input...)
	}
	return []nftBaseChain{
		{"filter-prerouting-pre-dnat", knftables.FilterType, knftables.PreroutingHook, "-110", []string{"ct state new jump " + nftFirewallCheck}},
		{"filter-output-pre-dnat", knftables.FilterType, knftables.OutputHook, "-110", []string{"ct state new jump " + nftFirewallCheck}},
		{"filter-input", knftables.FilterType, knftables.InputHook, "0", input},
		{"filter-forward", knftables.FilterType, knftables.ForwardHook, "0", []string{"ct state new jump " + nftServiceEPCheck, "ct state new jump " + nftClusterIPsCheck}},
		{"filter-output", knftables.FilterType, knftables.OutputHook, "0", []string{"ct state new jump " + nftServiceEPCheck, "ct state new jump " + nftClusterIPsCheck}},
		{"nat-prerouting", knftables.NATType, knftables.PreroutingHook, "-100", []string{"jump " + nftServices}},
		{"nat-output", knftables.NATType, knftables.OutputHook, "-100", []string{"jump " + nftServices}},
		{"nat-postrouting", knftables.NATType, knftables.PostroutingHook, "100", []string{"jump " + nftMasquerading}},
	}
}

// nftFixedChain is a regular chain every table has, with its rules that
// do not depend on the input (NFTState.FixedRules has the others).
type nftFixedChain struct {
	name  string
	rules []string
}

// nftFixedChains are the fixed regular chains of the family's table.
func nftFixedChains(ipv6 bool) []nftFixedChain {
	ipx := nftIP(ipv6)
	return []nftFixedChain{
		{nftMasquerading, []string{
			"meta mark & " + nftMasqMark + " != 0 meta mark set meta mark ^ " + nftMasqMark + " masquerade fully-random",
			"ct status dnat " + ipx + " saddr . " + ipx + " daddr . meta l4proto . th dport @" + nftHairpin + " masquerade fully-random",
		}},
		{nftServices, nil},
		{nftFirewallCheck, []string{ipx + " daddr . meta l4proto . th dport vmap @" + nftFirewallIPs}},
		{nftServiceEPCheck, []string{ipx + " daddr . meta l4proto . th dport vmap @" + nftNoEndpointSvcs}},
		{nftNodePortEPCheck, []string{nftNotLoopback(ipv6) + " meta l4proto . th dport vmap @" + nftNoEndpointPorts}},
		{nftRejectChain, []string{"reject"}},
		{nftClusterIPsCheck, []string{ipx + " daddr @" + nftClusterIPs + " reject"}},
	}
}

// nftSet is a set or map of the table: its name and type.
type nftSet struct {
	name, typ string
	isMap     bool
}

// nftSets are the sets and maps of the family's table.
func nftSets(ipv6 bool) []nftSet {
	addr := nftAddrType(ipv6)
	return []nftSet{
		{nftClusterIPs, addr, false},
		{nftHairpin, addr + " . " + addr + " . inet_proto . inet_service", false},
		{nftServiceIPs, addr + " . inet_proto . inet_service : verdict", true},
		{nftServiceNP, "inet_proto . inet_service : verdict", true},
		{nftFirewallIPs, addr + " . inet_proto . inet_service : verdict", true},
		{nftNoEndpointSvcs, addr + " . inet_proto . inet_service : verdict", true},
		{nftNoEndpointPorts, "inet_proto . inet_service : verdict", true},
	}
}

// nftFullTx adds to tx what makes the table (of st's family) hold st, from
// any state of it:
// the table, every chain flushed and written, every set and map with its
// elements. Chains and sets of st's absence are not deleted here. existing
// are the per-service chains the table has now (nil: unknown): only those
// need a flush, and nft is much slower with a flush of each of thousands.
func nftFullTx(tx *knftables.Transaction, st *NFTState, existing map[string]bool) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("rules for kube-proxy (orch)")})
	base, fixed, sets := nftBaseChains(st.IPv6), nftFixedChains(st.IPv6), nftSets(st.IPv6)
	for _, c := range base {
		tx.Add(&knftables.Chain{Name: c.name, Type: knftables.PtrTo(c.typ), Hook: knftables.PtrTo(c.hook), Priority: knftables.PtrTo(c.priority)})
		tx.Flush(&knftables.Chain{Name: c.name})
	}
	for _, c := range fixed {
		tx.Add(&knftables.Chain{Name: c.name})
		tx.Flush(&knftables.Chain{Name: c.name})
	}
	for _, s := range sets {
		if s.isMap {
			tx.Add(&knftables.Map{Name: s.name, Type: s.typ})
			tx.Flush(&knftables.Map{Name: s.name})
		} else {
			tx.Add(&knftables.Set{Name: s.name, Type: s.typ})
			tx.Flush(&knftables.Set{Name: s.name})
		}
	}
	for _, name := range sortedKeys(st.Affinity) {
		tx.Add(affinitySet(name, st.IPv6))
	}
	chains := sortedKeys(st.Chains)
	for _, name := range chains {
		tx.Add(&knftables.Chain{Name: name})
		if existing == nil || existing[name] {
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for _, name := range chains {
		for _, r := range st.Chains[name] {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
	}
	for _, s := range sets {
		elems := st.Elements[s.name]
		for _, k := range sortedKeys(elems) {
			e := &knftables.Element{Key: strings.Split(k, " . ")}
			if s.isMap {
				e.Map, e.Value = s.name, []string{elems[k]}
			} else {
				e.Set = s.name
			}
			tx.Add(e)
		}
	}
	for _, c := range base {
		for _, r := range c.rules {
			tx.Add(&knftables.Rule{Chain: c.name, Rule: r})
		}
	}
	for _, c := range fixed {
		rules := c.rules
		if r, ok := st.FixedRules[c.name]; ok {
			rules = r
		}
		for _, r := range rules {
			tx.Add(&knftables.Rule{Chain: c.name, Rule: r})
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// affinitySet is an affinity set: each element (a client) carries the
// timeout of the rule that added it (update … timeout), so that a new
// timeoutSeconds is a change of rules, which partial syncs write.
func affinitySet(name string, ipv6 bool) *knftables.Set {
	return &knftables.Set{Name: name, Type: nftAddrType(ipv6), Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}}
}
