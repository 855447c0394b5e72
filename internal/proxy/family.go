package proxy

import (
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"sigs.k8s.io/knftables"
)

// The proxy programs each IP family of the cluster on its own, as
// upstream's dual-stack kube-proxy does: the IPv4 rules go to iptables or
// the nftables table "ip kube-proxy", the IPv6 rules to ip6tables or
// "ip6 kube-proxy", each from the Services' addresses and the
// EndpointSlices of that family. The kernel keeps the families' tables
// and conntrack entries apart, so the two never see each other's
// packets. What the families' rules say differently is here.

// ipv6 reports whether in is the input of the IPv6 family.
func (in Input) ipv6() bool { return in.Family == v1.IPv6Protocol }

// addressType is the EndpointSlice address type of the family.
func addressType(ipv6 bool) discovery.AddressType {
	if ipv6 {
		return discovery.AddressTypeIPv6
	}
	return discovery.AddressTypeIPv4
}

func nftFamily(f v1.IPFamily) knftables.Family {
	if f == v1.IPv6Protocol {
		return knftables.IPv6Family
	}
	return knftables.IPv4Family
}

func conntrackFamily(f v1.IPFamily) netlink.InetFamily {
	if f == v1.IPv6Protocol {
		return unix.AF_INET6
	}
	return unix.AF_INET
}

// nftIP is nft's keyword for the family's addresses (ip daddr, ip6 saddr).
func nftIP(ipv6 bool) string {
	if ipv6 {
		return "ip6"
	}
	return "ip"
}

// nftAddrType is nft's type of the family's addresses in sets and maps.
func nftAddrType(ipv6 bool) string {
	if ipv6 {
		return "ipv6_addr"
	}
	return "ipv4_addr"
}

// nftNotLoopback matches destinations off the loopback addresses, where
// NodePorts are not served: an IPv4 NodePort on 127.0.0.1 would need
// route_localnet, which the nftables mode does not set, and IPv6 has no
// such setting at all.
func nftNotLoopback(ipv6 bool) string {
	if ipv6 {
		return "ip6 daddr != ::1"
	}
	return "ip daddr != 127.0.0.0/8"
}
