package proxy

import (
	v1 "k8s.io/api/core/v1"

	"orch/internal/iptsync"
)

var ctNew = []string{"-m", "conntrack", "--ctstate", "NEW"}

// jumps are upstream's, in upstream's order; each is inserted at the top
// of its built-in chain.
var jumps = []iptsync.Jump{
	{Table: "filter", From: "INPUT", To: chainExternalServices, Args: ctNew, Comment: "kubernetes externally-visible service portals"},
	{Table: "filter", From: "FORWARD", To: chainExternalServices, Args: ctNew, Comment: "kubernetes externally-visible service portals"},
	{Table: "filter", From: "INPUT", To: chainNodePorts, Comment: "kubernetes health check service ports"},
	{Table: "filter", From: "FORWARD", To: chainServices, Args: ctNew, Comment: "kubernetes service portals"},
	{Table: "filter", From: "OUTPUT", To: chainServices, Args: ctNew, Comment: "kubernetes service portals"},
	{Table: "filter", From: "FORWARD", To: chainForward, Comment: "kubernetes forwarding rules"},
	{Table: "filter", From: "INPUT", To: chainProxyFirewall, Args: ctNew, Comment: "kubernetes load balancer firewall"},
	{Table: "filter", From: "OUTPUT", To: chainProxyFirewall, Args: ctNew, Comment: "kubernetes load balancer firewall"},
	{Table: "filter", From: "FORWARD", To: chainProxyFirewall, Args: ctNew, Comment: "kubernetes load balancer firewall"},
	{Table: "nat", From: "OUTPUT", To: chainServices, Comment: "kubernetes service portals"},
	{Table: "nat", From: "PREROUTING", To: chainServices, Comment: "kubernetes service portals"},
	{Table: "nat", From: "POSTROUTING", To: chainPostrouting, Comment: "kubernetes postrouting rules"},
}

// firewallJumps go to KUBE-FIREWALL, as the kubelet writes them; IPv4
// only, as the chain (see builder.finish).
var firewallJumps = []iptsync.Jump{
	{Table: "filter", From: "INPUT", To: chainFirewall},
	{Table: "filter", From: "OUTPUT", To: chainFirewall},
}

// jumpsOf are the jump rules of the family's tables.
func jumpsOf(ipv6 bool) []iptsync.Jump {
	if ipv6 {
		return jumps
	}
	return append(append([]iptsync.Jump(nil), jumps...), firewallJumps...)
}

// newIPTablesDriver finds the family's iptables (ip6tables for IPv6) and
// the proxy's jumps.
func newIPTablesDriver(f v1.IPFamily) (*iptsync.Driver, error) {
	return iptsync.NewFamilyDriver(iptsync.FamilyOf(f), "proxy", jumpsOf(f == v1.IPv6Protocol), false)
}
