package netpol

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"orch/internal/cidr"
	"orch/internal/iptsync"
)

// The enforcer programs each IP family of the cluster on its own: the
// IPv4 rules, from the pods' IPv4 addresses and the IPv4 ipBlocks, go to
// iptables; the IPv6 rules, from the IPv6 ones, to ip6tables. The kernel
// keeps the two families' tables apart, so the chains have the same names
// and the same marks in both. What the families' rules say differently is
// here.

// familiesOf are the IP families of the cluster CIDRs, in their order;
// none is IPv4 alone (a cluster of an older configuration).
func familiesOf(cidrs []netip.Prefix) []iptsync.Family {
	if len(cidrs) == 0 {
		return []iptsync.Family{iptsync.IPv4}
	}
	var out []iptsync.Family
	for _, p := range cidrs {
		out = append(out, iptsync.FamilyOf(cidr.FamilyOf(p.Addr().String())))
	}
	return out
}

// netsOf keeps the CIDRs of family f, masked: an ipBlock (and its
// exceptions) goes to the rules of its own family only.
func netsOf(cidrs []string, f iptsync.Family) []string {
	var out []string
	for _, c := range cidrs {
		if _, n, err := net.ParseCIDR(c); err == nil && cidr.FamilyOf(n.IP.String()) == f.IPFamily() {
			out = append(out, n.String())
		}
	}
	return out
}

// hostBits is the prefix length that makes one address a CIDR: "/32",
// or "/128" for IPv6. The rules name addresses as CIDRs, as iptables-save
// prints them.
func hostBits(f iptsync.Family) string {
	if f == iptsync.IPv6 {
		return "/128"
	}
	return "/32"
}

// rejectWith is the ICMP error a denied packet gets: port unreachable, so
// that a client fails at once instead of waiting for a timeout. It is
// iptables' default for REJECT in each family; the rules say it
// explicitly, as iptables-save prints it.
func rejectWith(f iptsync.Family) string {
	if f == iptsync.IPv6 {
		return "icmp6-port-unreachable"
	}
	return "icmp-port-unreachable"
}

// linkLocal refuses, in a fixed chain of family f, traffic from and to
// IPv6 link-local addresses on the pods' bridge (ICMPv6, neighbour
// discovery among it, passes). Every pod has such an address next to the
// ones policies name, and a pod's rules match only those: without this, an
// isolated pod could be reached by its link-local address from a pod of
// its node, and could reach its node's by it. Kubernetes never uses these
// addresses between pods. IPv4, or no bridge: "".
func linkLocal(chain string, f iptsync.Family, bridge string) string {
	if f != iptsync.IPv6 || bridge == "" {
		return ""
	}
	var b strings.Builder
	for _, dir := range []string{"-s", "-d"} {
		// In ip6tables-save's order: addresses, then interface.
		fmt.Fprintf(&b, "-A %s %s fe80::/10 -i %s ! -p ipv6-icmp -m comment --comment \"link-local on the pod bridge\" -j REJECT --reject-with icmp6-port-unreachable\n", chain, dir, bridge)
	}
	return b.String()
}

// neighborDiscovery is the start of a fixed chain of family f that lets
// IPv6 neighbor discovery pass: it is IPv6's ARP (which is not IP, so the
// IPv4 rules never see it), conntrack does not track it (so it is never
// ESTABLISHED), and its solicitations and advertisements may come from a
// pod's own address. Without it an isolated pod could not resolve its
// gateway or the pods of its bridge (bridged frames pass ip6tables with
// br_netfilter), and every connection, allowed or not, would fail.
// kube-router lets them pass too. Router solicitations and MLD come from
// link-local addresses, which no rule names, so they need nothing here.
// IPv4 has none: "".
func neighborDiscovery(chain string, f iptsync.Family) string {
	if f != iptsync.IPv6 {
		return ""
	}
	var b strings.Builder
	for _, t := range []struct{ code, name string }{{"135", "neighbor solicitation"}, {"136", "neighbor advertisement"}} {
		// The type by number: iptables-save prints it so.
		fmt.Fprintf(&b, "-A %s -p ipv6-icmp -m icmp6 --icmpv6-type %s -m comment --comment \"IPv6 %s\" -j RETURN\n", chain, t.code, t.name)
	}
	return b.String()
}
