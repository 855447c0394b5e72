package proxy

import (
	"orch/internal/iptsync"
)

// ruleWriter is what a sync needs from iptables.
type ruleWriter interface {
	// EnsureJumps makes the built-in chains jump to the proxy's chains. It
	// reports whether a jump or chain was missing and had to be put back.
	EnsureJumps() (repaired bool, err error)
	// Restore applies iptables-restore input without flushing other chains.
	Restore(data []byte) error
	// Chains lists the chains of a table.
	Chains(table string) ([]string, error)
}

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

// iptablesDriver is the real ruleWriter: go-iptables for the jump rules,
// iptables-restore and iptables-save for the rest.
type iptablesDriver struct {
	*iptsync.Exec
	jumps *iptsync.Jumps
}

var _ ruleWriter = (*iptablesDriver)(nil)

func newIPTablesDriver() (*iptablesDriver, error) {
	js, err := iptsync.NewJumps("proxy", jumps, false)
	if err != nil {
		return nil, err
	}
	e, err := iptsync.NewExec("proxy")
	if err != nil {
		return nil, err
	}
	return &iptablesDriver{Exec: e, jumps: js}, nil
}

// EnsureJumps creates the target chains when missing and inserts each jump
// rule once, reporting whether anything was missing.
func (d *iptablesDriver) EnsureJumps() (bool, error) { return d.jumps.Ensure() }
