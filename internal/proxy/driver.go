package proxy

import (
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
	{Table: "filter", From: "INPUT", To: chainFirewall}, // as the kubelet writes them
	{Table: "filter", From: "OUTPUT", To: chainFirewall},
}

// newIPTablesDriver finds iptables and the proxy's jumps.
func newIPTablesDriver() (*iptsync.Driver, error) { return iptsync.NewDriver("proxy", jumps, false) }
