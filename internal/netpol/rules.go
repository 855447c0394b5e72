package netpol

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/iptsync"
)

// Input is everything the rules of one node in one IP family depend on.
type Input struct {
	NodeName string
	// Family is the IP family of the rules: the pods' addresses and the
	// ipBlocks of that family. The zero value is IPv4.
	Family iptsync.Family
	// PodBridge is the Linux bridge of this node's pods. IPv6: traffic
	// on it from or to link-local addresses, but ICMPv6, is refused, since
	// no pod's rule names those addresses (they would bypass isolation).
	// Empty: no such rule.
	PodBridge  string
	Policies   []*networkingv1.NetworkPolicy
	Pods       []*v1.Pod // every pod of the cluster: targets and peers
	Namespaces []*v1.Namespace
	// MaxSets is how many ipsets the rules may use: a rule's pod peers
	// are then one set, matched by one rule per port, and a pod that
	// comes, goes or changes address changes a set, not a chain. More
	// sets than that, or 0 (no ip_set in the kernel): a rule per peer
	// address, as without ipsets.
	MaxSets int
}

// Ruleset is the desired content of every chain the enforcer owns in one
// family, all in the filter table: the fixed chains first.
type Ruleset struct {
	Chains []iptsync.Chain
	// Sets are the ipsets the chains match, of the rules' family, sorted
	// by name; they must exist before the chains are written.
	Sets     []Set
	Pods     int // pods of this node isolated in a direction
	Policies int // policy chains
}

// Set is an ipset of type hash:ip: a rule's pod peers.
type Set struct {
	Name    string
	Members []string // addresses, sorted
}

// direction is what differs between ingress and egress rules.
type direction struct {
	name     string // "ingress", "egress"
	mark     string
	podChain string // prefix of the per-pod chain
	peerFlag string // the peer's side of a packet: "-s" for ingress
	ownFlag  string // the isolated pod's side: "-d" for ingress
	set      string // prefix of the peers' sets
	setDir   string // the peer's side in a set match: "src" for ingress
}

var (
	ingress = direction{"ingress", markIngress, prefixPodIn, "-s", "-d", prefixSetSrc, "src"}
	egress  = direction{"egress", markEgress, prefixPodOut, "-d", "-s", prefixSetDst, "dst"}
)

// Build computes the rules of in.NodeName in in.Family. It is pure: the
// same input always gives the same output, byte for byte.
func Build(in Input) *Ruleset {
	rs := build(in)
	if len(rs.Sets) > in.MaxSets {
		in.MaxSets = 0
		rs = build(in)
	}
	return rs
}

// build is Build, with sets for the pod peers when in.MaxSets > 0
// (however many it takes).
func build(in Input) *Ruleset {
	nsLabels := map[string]labels.Set{}
	for _, ns := range in.Namespaces {
		nsLabels[ns.Name] = labels.Set(ns.Labels)
	}
	pods := podsOf(in.Pods, in.Family)
	policies := append([]*networkingv1.NetworkPolicy(nil), in.Policies...)
	sort.Slice(policies, func(i, j int) bool {
		if policies[i].Namespace != policies[j].Namespace {
			return policies[i].Namespace < policies[j].Namespace
		}
		return policies[i].Name < policies[j].Name
	})

	b := builder{family: in.Family, bridge: in.PodBridge, sets: in.MaxSets > 0, pods: pods, nsLabels: nsLabels,
		in: map[string][]string{}, out: map[string][]string{}}
	for _, p := range policies {
		isIn, isOut := policyTypes(p)
		sel := selector(&p.Spec.PodSelector)
		var targets []*pod
		for _, q := range pods {
			if q.node == in.NodeName && q.namespace == p.Namespace && sel.Matches(q.labels) {
				targets = append(targets, q)
			}
		}
		if len(targets) == 0 {
			continue // nothing of this node to enforce
		}
		key := p.Namespace + "/" + p.Name
		for _, x := range []struct {
			d     direction
			on    bool
			rules []rule
			chain map[string][]string
		}{{ingress, isIn, rulesOf(p, ingress), b.in}, {egress, isOut, rulesOf(p, egress), b.out}} {
			if !x.on {
				continue
			}
			c := b.policy(x.d, key, p.Namespace, x.rules, targets)
			for _, t := range targets {
				x.chain[t.key] = append(x.chain[t.key], c)
			}
		}
	}
	return b.finish(pods, in.NodeName)
}

// rule is an ingress or an egress rule.
type rule struct {
	ports []networkingv1.NetworkPolicyPort
	peers []networkingv1.NetworkPolicyPeer
}

func rulesOf(p *networkingv1.NetworkPolicy, d direction) []rule {
	var out []rule
	if d.name == "ingress" {
		for _, r := range p.Spec.Ingress {
			out = append(out, rule{r.Ports, r.From})
		}
		return out
	}
	for _, r := range p.Spec.Egress {
		out = append(out, rule{r.Ports, r.To})
	}
	return out
}

type builder struct {
	family   iptsync.Family
	bridge   string
	sets     bool   // a rule's pod peers are a set
	pods     []*pod // with their addresses of family
	nsLabels map[string]labels.Set
	chains   []iptsync.Chain     // the policies' chains
	setList  []Set               // the sets they match
	in, out  map[string][]string // pod key → its policies' chains
}

// policy writes the chain of one policy in one direction, with the chains
// of its ipBlocks that have exceptions, and returns its name. The chain
// marks the packets the policy allows; targets are the pods of this node
// it selects (where an ingress rule's named ports are resolved).
func (b *builder) policy(d direction, key, ns string, rules []rule, targets []*pod) string {
	name := chainName(prefixPolicy, key+"/"+d.name)
	var w strings.Builder
	allow := "-j MARK --set-xmark " + d.mark + "/" + d.mark
	for i, r := range rules {
		var set *Set
		used := false // a rule matches set
		if b.sets && slices.ContainsFunc(r.peers, func(p networkingv1.NetworkPolicyPeer) bool { return p.IPBlock == nil }) {
			// The rule's pod peers, however many (none too), are one set:
			// its rules stay as they are when they change.
			set = &Set{Name: chainName(d.set, fmt.Sprintf("%s/%s/%d/%s", key, d.name, i, b.family))}
			matches := b.portMatches(d, r.ports, peer{set: true}, targets)
			for _, m := range matches {
				m.set = set.Name + " " + d.setDir
				fmt.Fprintf(&w, "-A %s %s%s\n", name, m, allow)
			}
			used = len(matches) > 0
		}
		for j, pe := range peers(r.peers, ns, b.pods, b.nsLabels, b.family) {
			if set != nil && pe.pod != nil {
				set.Members = append(set.Members, net.ParseIP(pe.pod.ip).String()) // as the kernel lists it
				if d.name == "ingress" {
					continue
				}
				// An egress named port resolves on each peer pod: a
				// rule of its own, which names the pod's address.
				for _, m := range b.portMatches(d, r.ports, pe, targets) {
					if m.named {
						fmt.Fprintf(&w, "-A %s %s%s\n", name, m, allow)
					}
				}
				continue
			}
			matches := b.portMatches(d, r.ports, pe, targets)
			if len(matches) == 0 {
				continue
			}
			if len(pe.except) == 0 {
				for _, m := range matches {
					if !(d.name == "egress" && m.named) { // else a pod inside the peer: its address is the match
						m.peer(d, pe.cidr)
					}
					fmt.Fprintf(&w, "-A %s %s%s\n", name, m, allow)
				}
				continue
			}
			// An ipBlock with exceptions: its own chain returns for
			// each exception before it marks.
			sub := chainName(prefixPolicy, fmt.Sprintf("%s/%s/%d/%d", key, d.name, i, j))
			fmt.Fprintf(&w, "-A %s %s %s -j %s\n", name, d.peerFlag, pe.cidr, sub)
			var sw strings.Builder
			for _, e := range pe.except {
				fmt.Fprintf(&sw, "-A %s %s %s -j RETURN\n", sub, d.peerFlag, e)
			}
			for _, m := range matches {
				fmt.Fprintf(&sw, "-A %s %s%s\n", sub, m, allow)
			}
			b.chains = append(b.chains, iptsync.Chain{Name: sub, Rules: sw.String()})
		}
		if used {
			slices.Sort(set.Members)
			set.Members = slices.Compact(set.Members)
			b.setList = append(b.setList, *set)
		}
	}
	b.chains = append(b.chains, iptsync.Chain{Name: name, Rules: w.String()})
	return name
}

// match is what a policy rule matches besides its direction's mark, in
// iptables-save's order: addresses, protocol, set, port.
type match struct {
	src, dst string // CIDRs, or ""
	proto    string // "tcp", "udp", "sctp", or "" for all
	set      string // "NAME src" or "NAME dst", or ""
	dport    string // "8080" or "7000:7010", or "" for all
	named    bool   // dst is the pod a named egress port resolved on
}

// peer sets the peer's side of m to cidr ("": anyone).
func (m *match) peer(d direction, cidr string) {
	if d.peerFlag == "-s" {
		m.src = cidr
	} else {
		m.dst = cidr
	}
}

// String is m as a rule says it, with a trailing space unless empty.
func (m match) String() string {
	var w strings.Builder
	for _, x := range []struct{ flag, v string }{{"-s", m.src}, {"-d", m.dst}, {"-p", m.proto}, {"-m set --match-set", m.set}} {
		if x.v != "" {
			w.WriteString(x.flag + " " + x.v + " ")
		}
	}
	if m.dport != "" {
		fmt.Fprintf(&w, "-m %s --dport %s ", m.proto, m.dport)
	}
	return w.String()
}

// portMatches are the matches of a rule's ports for one peer: no ports
// is every port. A named port is resolved on the pod it names a port of:
// the isolated target for ingress, the peer (or, for a block or anyone,
// every pod in it) for egress; for an egress rule's set of pods it is not
// resolved (the pods' own rules have it). A name that resolves nowhere
// matches nothing.
func (b *builder) portMatches(d direction, ports []networkingv1.NetworkPolicyPort, pe peer, targets []*pod) []match {
	if len(ports) == 0 {
		return []match{{}}
	}
	var out []match
	for _, p := range ports {
		proto := v1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		lp := strings.ToLower(string(proto))
		switch {
		case p.Port == nil:
			out = append(out, match{proto: lp})
		case p.Port.Type == intstr.Int:
			dport := strconv.Itoa(int(p.Port.IntVal))
			if p.EndPort != nil && *p.EndPort > p.Port.IntVal {
				dport += ":" + strconv.Itoa(int(*p.EndPort))
			}
			out = append(out, match{proto: lp, dport: dport})
		default:
			var on []*pod
			switch {
			case d.name == "ingress":
				on = targets
			case pe.set:
			case pe.pod != nil:
				on = []*pod{pe.pod}
			default:
				for _, q := range b.pods {
					if pe.contains(q.ip) {
						on = append(on, q)
					}
				}
			}
			for _, q := range on {
				if n := q.namedPort(p.Port.StrVal, proto); n != 0 {
					out = append(out, match{dst: q.ip + hostBits(b.family), proto: lp, dport: strconv.Itoa(int(n)), named: d.name == "egress"})
				}
			}
		}
	}
	return out
}

// finish writes the per-pod chains and the fixed chains that lead to them.
func (b *builder) finish(pods []*pod, node string) *Ruleset {
	rs := &Ruleset{Policies: len(b.chains), Sets: b.setList}
	sort.Slice(rs.Sets, func(i, j int) bool { return rs.Sets[i].Name < rs.Sets[j].Name })
	var fwd, input strings.Builder
	established := "-m conntrack --ctstate RELATED,ESTABLISHED -j RETURN\n"
	fwd.WriteString("-A " + chainForward + " " + established)
	input.WriteString("-A " + chainInput + " " + established)
	fwd.WriteString(neighborDiscovery(chainForward, b.family))
	input.WriteString(neighborDiscovery(chainInput, b.family))
	fwd.WriteString(linkLocal(chainForward, b.family, b.bridge))
	input.WriteString(linkLocal(chainInput, b.family, b.bridge))
	for _, q := range pods {
		if q.node != node {
			continue
		}
		for _, d := range []direction{egress, ingress} {
			policies := b.in[q.key]
			if d.name == "egress" {
				policies = b.out[q.key]
			}
			if len(policies) == 0 {
				continue
			}
			rs.Pods++
			c := chainName(d.podChain, q.key)
			hook := fmt.Sprintf("%s %s%s -m comment --comment \"%s %s\" -j %s\n", d.ownFlag, q.ip, hostBits(b.family), q.key, d.name, c)
			fwd.WriteString("-A " + chainForward + " " + hook)
			if d.name == "egress" {
				input.WriteString("-A " + chainInput + " " + hook) // to its own node
			}
			// The node's own traffic to its pods (the kubelet's probes)
			// leaves through OUTPUT, which is not hooked: it always
			// passes, as upstream's implementations allow.
			var w strings.Builder
			fmt.Fprintf(&w, "-A %s -j MARK --set-xmark 0x0/%s\n", c, d.mark)
			for _, p := range policies {
				fmt.Fprintf(&w, "-A %s -j %s\n", c, p)
			}
			fmt.Fprintf(&w, "-A %s -m mark --mark %s/%s -j RETURN\n", c, d.mark, d.mark)
			fmt.Fprintf(&w, "-A %s -m comment --comment \"network policy denies %s of %s\" -j REJECT --reject-with %s\n", c, d.name, q.key, rejectWith(b.family))
			rs.Chains = append(rs.Chains, iptsync.Chain{Name: c, Rules: w.String()})
		}
	}
	fixed := []iptsync.Chain{{Name: chainForward, Rules: fwd.String()}, {Name: chainInput, Rules: input.String()}}
	rs.Chains = append(append(fixed, rs.Chains...), b.chains...)
	return rs
}
