package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// The nftables mode's objects, laid out as upstream kube-proxy's nftables
// mode lays them out (one table per family, "ip kube-proxy" and
// "ip6 kube-proxy", of the same layout; verdict maps keyed on
// destination . protocol . port dispatch every packet in one lookup; a
// chain per service port and policy). NFTBuild is pure; a syncer turns
// the difference between two NFTStates into one nft transaction.
const (
	nftTable = "kube-proxy"

	nftServices        = "services"
	nftMasquerading    = "masquerading"
	nftFirewallCheck   = "firewall-check"
	nftServiceEPCheck  = "service-endpoints-check"
	nftNodePortEPCheck = "nodeport-endpoints-check"
	nftRejectChain     = "reject-chain"
	nftClusterIPsCheck = "cluster-ips-check"

	nftClusterIPs      = "cluster-ips"
	nftHairpin         = "hairpin-connections"
	nftServiceIPs      = "service-ips"
	nftServiceNP       = "service-nodeports"
	nftFirewallIPs     = "firewall-ips"
	nftNoEndpointSvcs  = "no-endpoint-services"
	nftNoEndpointPorts = "no-endpoint-nodeports"

	nftMasqMark = "0x4000"
)

// NFTState is the desired content of the nftables mode's table beyond its
// fixed part (nftFixed): the per-service chains with their rules, the
// elements of the sets and maps, and the affinity sets.
type NFTState struct {
	// Chains are the per-service and per-endpoint chains (names with a
	// "/"), rules in order.
	Chains map[string][]string
	// Elements maps a set or map to its elements: key ("a . b . c") →
	// value ("" in a set).
	Elements map[string]map[string]string
	// Affinity are the affinity sets (per endpoint) and their timeouts in
	// seconds.
	Affinity map[string]int
	// FixedRules are the rules of the fixed regular chains that depend on
	// the input (the cluster CIDR).
	FixedRules map[string][]string
	// IPv6 is set in the state of the "ip6 kube-proxy" table.
	IPv6 bool

	ServicePorts, Endpoints int
	UDP                     udpState
}

// nftHash is upstream's chain name hash: the first 8 characters of the
// base32 encoding of sha256(s).
func nftHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:8]
}

// nftBase is a service port's chain name base, "HASH-ns/name/proto/port"
// (port: the port's name, empty for an unnamed one).
func nftBase(sp *servicePort) string {
	svc, port, _ := strings.Cut(sp.name, ":")
	s := svc + "/" + sp.protocol + "/" + port
	return nftHash(s) + "-" + s
}

// nftEndpointBase is an endpoint's chain name base. A chain name cannot
// hold a ":", so an IPv6 address is written with "." instead (as upstream).
func nftEndpointBase(sp *servicePort, e endpoint) string {
	svc, port, _ := strings.Cut(sp.name, ":")
	s := svc + "/" + sp.protocol + "/" + port + "__" + strings.ReplaceAll(e.ip, ":", ".") + "/" + strconv.Itoa(e.port)
	name := nftHash(s) + "-" + s
	if len(name) > 240 { // knftables' name budget, as upstream
		name = name[:237] + "..."
	}
	return name
}

// NFTBuild computes the nftables mode's state of in's family (the table
// "ip kube-proxy" or "ip6 kube-proxy"). It is pure.
func NFTBuild(in Input) *NFTState {
	ports := sortedServicePorts(in.Services, in.ipv6())
	eps := endpointsByPort(in.Slices, in.NodeName, in.ipv6())
	st := &NFTState{Chains: map[string][]string{}, Elements: map[string]map[string]string{}, Affinity: map[string]int{}, FixedRules: map[string][]string{},
		UDP: newUDPState(), IPv6: in.ipv6()}
	for _, m := range []string{nftClusterIPs, nftHairpin, nftServiceIPs, nftServiceNP, nftFirewallIPs, nftNoEndpointSvcs, nftNoEndpointPorts} {
		st.Elements[m] = map[string]string{}
	}
	ipx := nftIP(st.IPv6) // ip or ip6
	masq := []string{}
	if in.ClusterCIDR != "" {
		masq = append(masq, ipx+" daddr @"+nftClusterIPs+" "+ipx+" saddr != "+in.ClusterCIDR+" mark set mark or "+nftMasqMark)
	}
	st.FixedRules[nftServices] = append(masq,
		ipx+" daddr . meta l4proto . th dport vmap @"+nftServiceIPs,
		"fib daddr type local "+nftNotLoopback(st.IPv6)+" meta l4proto . th dport vmap @"+nftServiceNP)
	for _, sp := range ports {
		st.servicePort(sp, eps[sp.name+"\x00"+sp.protocol], in)
	}
	return st
}

func (st *NFTState) elem(set, key, value string) { st.Elements[set][key] = value }

func (st *NFTState) servicePort(sp *servicePort, eps []endpoint, in Input) {
	clusterCIDR := in.ClusterCIDR
	cluster, local, reachable, any := categorize(sp, eps)
	st.ServicePorts++
	st.UDP.add(sp, eps)
	base := nftBase(sp)
	svcChain, localChain, extChain, fwChain := "service-"+base, "local-"+base, "external-"+base, "firewall-"+base
	usesFW := any && len(sp.lbIPs) > 0 && len(sp.lbSources) > 0

	internal, hasInternal := svcChain, any
	if sp.internalLocal {
		internal, hasInternal = localChain, any && len(local) > 0
	}
	hasExternal := any
	if sp.externalLocal {
		hasExternal = any && len(local) > 0
	}
	noInternal, noExternal := "goto "+nftRejectChain, "goto "+nftRejectChain
	if any {
		noInternal, noExternal = "drop", "drop"
	}
	proto, port := sp.protocol, strconv.Itoa(sp.port)
	key := func(ip, p string) string { return ip + " . " + proto + " . " + p }
	ipx := nftIP(st.IPv6) // ip or ip6

	st.elem(nftClusterIPs, sp.clusterIP, "")
	if hasInternal {
		st.elem(nftServiceIPs, key(sp.clusterIP, port), "goto "+internal)
	} else {
		st.elem(nftNoEndpointSvcs, key(sp.clusterIP, port), noInternal)
	}
	for _, ip := range append(append([]string{}, sp.externalIPs...), sp.lbIPs...) {
		if any {
			st.elem(nftServiceIPs, key(ip, port), "goto "+extChain)
		}
		if !hasExternal {
			st.elem(nftNoEndpointSvcs, key(ip, port), noExternal)
		}
	}
	if usesFW {
		for _, ip := range sp.lbIPs {
			st.elem(nftFirewallIPs, key(ip, port), "goto "+fwChain)
		}
		// A node inside a source range also reaches the balancer's
		// addresses bound on it, where its traffic loops back from them.
		allowed := append([]string{}, sp.lbSources...)
		if sourcesHoldNode(sp.lbSources, in.NodeIPs) {
			allowed = append(allowed, sp.lbIPs...)
		}
		st.Chains[fwChain] = []string{ipx + " saddr != { " + strings.Join(allowed, ", ") + " } drop"}
	}
	if sp.nodePort != 0 {
		npKey := proto + " . " + strconv.Itoa(sp.nodePort)
		if any {
			st.elem(nftServiceNP, npKey, "goto "+extChain)
		}
		if !hasExternal {
			st.elem(nftNoEndpointPorts, npKey, noExternal)
		}
	}
	if any && sp.externallyAccessible {
		var r []string
		if !sp.externalLocal {
			r = append(r, "mark set mark or "+nftMasqMark, "goto "+svcChain)
		} else {
			if clusterCIDR != "" {
				r = append(r, ipx+" saddr "+clusterCIDR+" goto "+svcChain)
			}
			r = append(r, "fib saddr type local mark set mark or "+nftMasqMark, "fib saddr type local goto "+svcChain)
			if len(local) > 0 {
				r = append(r, "goto "+localChain)
			}
		}
		st.Chains[extChain] = r
	}
	if len(cluster) > 0 && sp.usesCluster() {
		st.Chains[svcChain] = st.toEndpoints(sp, cluster)
	}
	if len(local) > 0 && sp.usesLocal() {
		st.Chains[localChain] = st.toEndpoints(sp, local)
	}
	for _, e := range reachable {
		if e.local {
			st.elem(nftHairpin, e.ip+" . "+e.ip+" . "+proto+" . "+strconv.Itoa(e.port), "")
		}
		if sp.affinitySeconds > 0 {
			eb := nftEndpointBase(sp, e)
			st.Affinity["affinity-"+eb] = sp.affinitySeconds
			// The timeout in the rule too: a changed timeoutSeconds
			// changes the chain, which a partial sync writes.
			st.Chains["endpoint-"+eb] = []string{fmt.Sprintf("update @affinity-%s { %s saddr timeout %ds }", eb, ipx, sp.affinitySeconds), dnatTo(proto, e)}
		}
	}
	st.Endpoints += len(reachable)
}

// dnatTo is the DNAT to e; an IPv6 address goes in brackets before the
// port (e.String()), as nft needs it.
func dnatTo(proto string, e endpoint) string {
	return "meta l4proto " + proto + " dnat to " + e.String()
}

// toEndpoints is the rules of a service or local chain: with affinity,
// a client seen recently goes to its endpoint, then a random pick.
func (st *NFTState) toEndpoints(sp *servicePort, eps []endpoint) []string {
	if sp.affinitySeconds > 0 {
		var r, vmap []string
		for i, e := range eps {
			eb := nftEndpointBase(sp, e)
			r = append(r, nftIP(st.IPv6)+" saddr @affinity-"+eb+" goto endpoint-"+eb)
			vmap = append(vmap, fmt.Sprintf("%d : goto endpoint-%s", i, eb))
		}
		return append(r, fmt.Sprintf("numgen random mod %d vmap { %s }", len(eps), strings.Join(vmap, " , ")))
	}
	// Endpoint i of n is picked with probability 1/(n-i) when the ones
	// before it were not: each of them 1/n. Upstream writes one rule with
	// an anonymous numgen map instead, but each such map is a set of its
	// own, and nft 1.0.6 (Debian 12) takes 12 s to load 10,000 of them;
	// these rules load in under a second (docs/benchmarks.md).
	var r []string
	for i, e := range eps {
		if left := len(eps) - i; left > 1 {
			r = append(r, fmt.Sprintf("numgen random mod %d == 0 %s", left, dnatTo(sp.protocol, e)))
		} else {
			r = append(r, dnatTo(sp.protocol, e))
		}
	}
	return r
}

// sourcesHoldNode reports whether one of the CIDRs holds a node address.
func sourcesHoldNode(cidrs []string, nodeIPs []net.IP) bool {
	for _, c := range cidrs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			continue
		}
		for _, ip := range nodeIPs {
			if n.Contains(ip) {
				return true
			}
		}
	}
	return false
}
