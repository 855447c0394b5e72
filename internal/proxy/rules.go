package proxy

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// largeClusterEndpoints is upstream's threshold (reachable endpoints) above
// which the per-endpoint rules carry no comments, to keep the tables small.
const largeClusterEndpoints = 1000

// Input is everything the desired rules of one IP family depend on.
type Input struct {
	// Family is the IP family whose rules are built (IPv4 when empty):
	// only the Services' addresses and the EndpointSlices of that family
	// count.
	Family   v1.IPFamily
	Services []*v1.Service
	Slices   []*discovery.EndpointSlice
	NodeName string
	NodeIPs  []net.IP
	// ClusterCIDR is the family's pod CIDR; "" disables the masquerade of
	// off-cluster traffic to cluster IPs.
	ClusterCIDR string
}

// Chain is one chain and its rules, as iptables-restore lines ("-A NAME …\n").
type Chain struct {
	Name  string
	Rules string
}

// Ruleset is the desired content of every chain the proxy owns. The fixed
// chains come first in each table, the per-service nat chains after them.
type Ruleset struct {
	Filter []Chain
	NAT    []Chain

	ServicePorts int // service ports programmed
	Endpoints    int // KUBE-SEP chains
	UDP          udpState
}

// Build computes the desired rules of in's family, for iptables-restore
// (IPv4) or ip6tables-restore (IPv6). It is pure: the same input always
// gives the same output, byte for byte.
func Build(in Input) *Ruleset {
	ports := sortedServicePorts(in.Services, in.ipv6())
	eps := endpointsByPort(in.Slices, in.NodeName, in.ipv6())

	b := &builder{in: in, out: &Ruleset{UDP: newUDPState()}, fixed: map[string]*strings.Builder{}}
	total := 0
	for _, sp := range ports {
		_, _, reach, _ := categorize(sp, eps[sp.name+"\x00"+sp.protocol])
		total += len(reach)
	}
	b.large = total > largeClusterEndpoints
	for _, sp := range ports {
		b.servicePort(sp, eps[sp.name+"\x00"+sp.protocol])
	}
	b.finish()
	return b.out
}

// builder accumulates the rules of one Build.
type builder struct {
	in    Input
	out   *Ruleset
	large bool
	fixed map[string]*strings.Builder // "nat/KUBE-SERVICES" → rules
}

// rule appends one rule line to a builder.
func rule(b *strings.Builder, args ...string) {
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	b.WriteByte('\n')
}

func quote(s string) string { return `"` + s + `"` }

func (b *builder) fixedChain(table, name string) *strings.Builder {
	k := table + "/" + name
	if b.fixed[k] == nil {
		b.fixed[k] = &strings.Builder{}
	}
	return b.fixed[k]
}

// group holds the per-service nat chains of one service port, in order.
type group struct {
	names  []string
	chains map[string]*strings.Builder
}

func (g *group) chain(name string) *strings.Builder {
	if g.chains == nil {
		g.chains = map[string]*strings.Builder{}
	}
	if c, ok := g.chains[name]; ok {
		return c
	}
	c := &strings.Builder{}
	c.Grow(384) // a chain of a few rules, without regrowing
	g.chains[name] = c
	g.names = append(g.names, name)
	return c
}

func (b *builder) servicePort(sp *servicePort, eps []endpoint) {
	cluster, local, reachable, any := categorize(sp, eps)
	b.out.ServicePorts++
	b.out.UDP.add(sp, eps)

	usesClusterChain := len(cluster) > 0 && sp.usesCluster()
	usesLocalChain := len(local) > 0 && sp.usesLocal()
	internalChain, hasInternal := sp.svc, any
	if sp.internalLocal {
		internalChain, hasInternal = sp.svl, any && len(local) > 0
	}
	externalPolicy, hasExternal := sp.svc, any
	if sp.externalLocal {
		externalPolicy, hasExternal = sp.svl, any && len(local) > 0
	}
	usesExt := any && sp.externallyAccessible
	usesFW := any && len(sp.lbIPs) > 0 && len(sp.lbSources) > 0
	lbChain := sp.ext
	if usesFW {
		lbChain = sp.fw
	}
	internalTarget, internalComment := "", ""
	externalTarget, externalComment := "", ""
	if !any {
		internalTarget, externalTarget = "REJECT", "REJECT"
		internalComment = quote(sp.name + " has no endpoints")
		externalComment = internalComment
	} else {
		if !hasInternal {
			internalTarget, internalComment = "DROP", quote(sp.name+" has no local endpoints")
		}
		if !hasExternal {
			externalTarget, externalComment = "DROP", quote(sp.name+" has no local endpoints")
		}
	}

	proto := []string{"-m", sp.protocol, "-p", sp.protocol}
	port := strconv.Itoa(sp.port)
	natSvc := b.fixedChain("nat", chainServices)
	natNP := b.fixedChain("nat", chainNodePorts)
	fSvc := b.fixedChain("filter", chainServices)
	fExt := b.fixedChain("filter", chainExternalServices)
	dest := func(ip, p string) []string { return append(append([]string{}, proto...), "-d", ip, "--dport", p) }
	line := func(c *strings.Builder, head []string, mid []string, tail ...string) {
		rule(c, append(append(head, mid...), tail...)...)
	}

	// Cluster IP.
	if hasInternal {
		line(natSvc, []string{"-A", chainServices, "-m", "comment", "--comment", quote(sp.name + " cluster IP")}, dest(sp.clusterIP, port), "-j", internalChain)
	} else {
		line(fSvc, []string{"-A", chainServices, "-m", "comment", "--comment", internalComment}, dest(sp.clusterIP, port), "-j", internalTarget)
	}
	// External IPs.
	for _, ip := range sp.externalIPs {
		if any {
			line(natSvc, []string{"-A", chainServices, "-m", "comment", "--comment", quote(sp.name + " external IP")}, dest(ip, port), "-j", sp.ext)
		}
		if !hasExternal {
			line(fExt, []string{"-A", chainExternalServices, "-m", "comment", "--comment", externalComment}, dest(ip, port), "-j", externalTarget)
		}
	}
	// Load-balancer ingress IPs.
	for _, ip := range sp.lbIPs {
		if any {
			line(natSvc, []string{"-A", chainServices, "-m", "comment", "--comment", quote(sp.name + " loadbalancer IP")}, dest(ip, port), "-j", lbChain)
		}
		if usesFW {
			line(b.fixedChain("filter", chainProxyFirewall), []string{"-A", chainProxyFirewall, "-m", "comment", "--comment", quote(sp.name + " traffic not accepted by " + sp.fw)}, dest(ip, port), "-j", "DROP")
		}
	}
	if !hasExternal {
		for _, ip := range sp.lbIPs {
			line(fExt, []string{"-A", chainExternalServices, "-m", "comment", "--comment", externalComment}, dest(ip, port), "-j", externalTarget)
		}
	}
	// NodePort.
	if sp.nodePort != 0 {
		np := strconv.Itoa(sp.nodePort)
		if any {
			line(natNP, []string{"-A", chainNodePorts, "-m", "comment", "--comment", sp.name}, proto, "--dport", np, "-j", sp.ext)
		}
		if !hasExternal {
			line(fExt, []string{"-A", chainExternalServices, "-m", "comment", "--comment", externalComment, "-m", "addrtype", "--dst-type", "LOCAL"}, proto, "--dport", np, "-j", externalTarget)
		}
	}
	if sp.healthCheck != 0 {
		rule(b.fixedChain("filter", chainNodePorts), "-A", chainNodePorts, "-m", "comment", "--comment", quote(sp.name+" health check node port"),
			"-m", "tcp", "-p", "tcp", "--dport", strconv.Itoa(sp.healthCheck), "-j", "ACCEPT")
	}

	// Per-service chains.
	var g group
	if hasInternal && b.in.ClusterCIDR != "" {
		line(g.chain(internalChain), []string{"-A", internalChain, "-m", "comment", "--comment", quote(sp.name + " cluster IP")}, dest(sp.clusterIP, port),
			"!", "-s", b.in.ClusterCIDR, "-j", chainMarkMasq)
	}
	if usesExt {
		ext := g.chain(sp.ext)
		if !sp.externalLocal {
			rule(ext, "-A", sp.ext, "-m", "comment", "--comment", quote("masquerade traffic for "+sp.name+" external destinations"), "-j", chainMarkMasq)
		} else {
			if b.in.ClusterCIDR != "" {
				rule(ext, "-A", sp.ext, "-m", "comment", "--comment", quote("pod traffic for "+sp.name+" external destinations"), "-s", b.in.ClusterCIDR, "-j", sp.svc)
			}
			rule(ext, "-A", sp.ext, "-m", "comment", "--comment", quote("masquerade LOCAL traffic for "+sp.name+" external destinations"), "-m", "addrtype", "--src-type", "LOCAL", "-j", chainMarkMasq)
			rule(ext, "-A", sp.ext, "-m", "comment", "--comment", quote("route LOCAL traffic for "+sp.name+" external destinations"), "-m", "addrtype", "--src-type", "LOCAL", "-j", sp.svc)
		}
		if hasExternal {
			rule(ext, "-A", sp.ext, "-j", externalPolicy)
		}
	}
	if usesFW {
		fw := g.chain(sp.fw)
		head := []string{"-A", sp.fw, "-m", "comment", "--comment", quote(sp.name + " loadbalancer IP")}
		fromNode := false
		for _, cidr := range sp.lbSources {
			line(fw, head, []string{"-s", cidr}, "-j", sp.ext)
			_, n, _ := net.ParseCIDR(cidr)
			for _, ip := range b.in.NodeIPs {
				if n != nil && n.Contains(ip) {
					fromNode = true
				}
			}
		}
		if fromNode {
			for _, ip := range sp.lbIPs {
				line(fw, head, []string{"-s", ip}, "-j", sp.ext)
			}
		}
		rule(fw, "-A", sp.fw, "-m", "comment", "--comment", quote("other traffic to "+sp.name+" will be dropped by KUBE-PROXY-FIREWALL"))
	}
	if usesClusterChain {
		b.toEndpoints(g.chain(sp.svc), sp, sp.svc, cluster)
	}
	if usesLocalChain {
		b.toEndpoints(g.chain(sp.svl), sp, sp.svl, local)
	}
	for _, e := range reachable {
		c := g.chain(e.chain)
		head := []string{"-A", e.chain}
		if !b.large {
			head = append(head, "-m", "comment", "--comment", sp.name)
		}
		line(c, head, nil, "-s", e.ip, "-j", chainMarkMasq)
		if sp.affinitySeconds > 0 {
			head = append(head, "-m", "recent", "--name", e.chain, "--set")
		}
		line(c, head, proto, "-j", "DNAT", "--to-destination", e.String())
	}
	b.out.Endpoints += len(reachable)
	for _, n := range g.names {
		b.out.NAT = append(b.out.NAT, Chain{Name: n, Rules: g.chains[n].String()})
	}
}

// toEndpoints writes the rules of a KUBE-SVC or KUBE-SVL chain: sticky
// rules for session affinity, then a random spread over the endpoints.
func (b *builder) toEndpoints(c *strings.Builder, sp *servicePort, chain string, eps []endpoint) {
	comment := func(e endpoint) []string {
		if b.large {
			return nil
		}
		return []string{"-m", "comment", "--comment", quote(sp.name + " -> " + e.String())}
	}
	if sp.affinitySeconds > 0 {
		for _, e := range eps {
			rule(c, append(append([]string{"-A", chain}, comment(e)...),
				"-m", "recent", "--name", e.chain, "--rcheck", "--seconds", strconv.Itoa(sp.affinitySeconds), "--reap", "-j", e.chain)...)
		}
	}
	for i, e := range eps {
		args := append([]string{"-A", chain}, comment(e)...)
		if i < len(eps)-1 {
			args = append(args, "-m", "statistic", "--mode", "random", "--probability", probability(len(eps)-i))
		}
		rule(c, append(args, "-j", e.chain)...)
	}
}

// probability is the chance that the first of n remaining endpoints is
// picked, written as upstream does.
func probability(n int) string { return fmt.Sprintf("%0.10f", 1.0/float64(n)) }

// finish writes the fixed chains, which do not depend on a single service.
func (b *builder) finish() {
	natSvc := b.fixedChain("nat", chainServices)
	local := []string{"-m", "addrtype", "--dst-type", "LOCAL"}
	if b.in.ipv6() {
		// As upstream: IPv6 has no route_localnet, so DNAT cannot send
		// what is addressed to ::1 elsewhere; NodePorts are not served there.
		local = append(local, "!", "-d", "::1/128")
	}
	rule(natSvc, append(append([]string{"-A", chainServices, "-m", "comment", "--comment", quote("kubernetes service nodeports; NOTE: this must be the last rule in this chain")},
		local...), "-j", chainNodePorts)...)
	post := b.fixedChain("nat", chainPostrouting)
	rule(post, "-A", chainPostrouting, "-m", "mark", "!", "--mark", masqMark+"/"+masqMark, "-j", "RETURN")
	rule(post, "-A", chainPostrouting, "-j", "MARK", "--xor-mark", masqMark)
	rule(post, "-A", chainPostrouting, "-m", "comment", "--comment", quote("kubernetes service traffic requiring SNAT"), "-j", "MASQUERADE", "--random-fully")
	rule(b.fixedChain("nat", chainMarkMasq), "-A", chainMarkMasq, "-j", "MARK", "--or-mark", masqMark)
	fwd := b.fixedChain("filter", chainForward)
	rule(fwd, "-A", chainForward, "-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP")
	rule(fwd, "-A", chainForward, "-m", "comment", "--comment", quote("kubernetes forwarding rules"), "-m", "mark", "--mark", masqMark+"/"+masqMark, "-j", "ACCEPT")
	rule(fwd, "-A", chainForward, "-m", "comment", "--comment", quote("kubernetes forwarding conntrack rule"), "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT")
	if !b.in.ipv6() {
		// NodePorts answer on 127.0.0.1 (route_localnet=1, set by the
		// Proxier), which would also let other hosts reach the node's
		// loopback services: this rule, upstream's, drops what comes from
		// outside to 127.0.0.0/8. IPv6 never routes ::1: upstream writes
		// the rule for IPv4 only, and the IPv6 tables get no such chain.
		rule(b.fixedChain("filter", chainFirewall), "-A", chainFirewall, "-m", "comment", "--comment", quote("block incoming localnet connections"),
			"-d", "127.0.0.0/8", "!", "-s", "127.0.0.0/8", "-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "DROP")
	}

	fixed := func(table string, names []string) []Chain {
		out := make([]Chain, 0, len(names))
		for _, n := range names {
			out = append(out, Chain{Name: n, Rules: b.fixedChain(table, n).String()})
		}
		return out
	}
	b.out.Filter = fixed("filter", filterFixedChains(b.in.ipv6()))
	b.out.NAT = append(fixed("nat", natFixedChains), b.out.NAT...)
}

// Rules counts the rules of the chains.
func Rules(chains []Chain) int {
	n := 0
	for _, c := range chains {
		n += strings.Count(c.Rules, "\n")
	}
	return n
}
