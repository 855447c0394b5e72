package network

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// orch's own iptables chains and the built-in chains that jump to them.
const (
	MasqChain    = "ORCH-POSTROUTING" // nat, from POSTROUTING
	ForwardChain = "ORCH-FORWARD"     // filter, from FORWARD
)

// iptablesRunner is the part of go-iptables the rules need (*iptables.IPTables; a fake in tests).
type iptablesRunner interface {
	Exists(table, chain string, rulespec ...string) (bool, error)
	Append(table, chain string, rulespec ...string) error
	DeleteIfExists(table, chain string, rulespec ...string) error
	List(table, chain string) ([]string, error)
	ChainExists(table, chain string) (bool, error)
	ClearChain(table, chain string) error
	ClearAndDeleteChain(table, chain string) error
}

// ruleChain is one of orch's chains: its rules, in order, and the rule of
// the built-in chain that jumps to it. Every rule has a comment of its own.
type ruleChain struct {
	Table, Parent, Name string
	Jump                []string
	Rules               [][]string
}

func comment(c string) []string { return []string{"-m", "comment", "--comment", c} }

// masqChains are orch's chains for cluster CIDR cluster (e.g.
// "10.42.0.0/16"); randomFully adds --random-fully to MASQUERADE (iptables
// 1.6.2 and later).
func masqChains(cluster string, randomFully bool) []ruleChain {
	multicast := "224.0.0.0/4"
	if strings.Contains(cluster, ":") {
		multicast = "ff00::/8"
	}
	masq := append([]string{"-s", cluster, "!", "-d", multicast}, comment("orch: pods to outside the cluster CIDR")...)
	masq = append(masq, "-j", "MASQUERADE")
	if randomFully {
		masq = append(masq, "--random-fully")
	}
	return []ruleChain{
		{
			Table: "nat", Parent: "POSTROUTING", Name: MasqChain,
			Jump: append(comment("orch: cluster network NAT"), "-j", MasqChain),
			Rules: [][]string{
				append(append([]string{"-s", cluster, "-d", cluster}, comment("orch: pod to pod, no NAT")...), "-j", "RETURN"),
				masq,
			},
		},
		{
			Table: "filter", Parent: "FORWARD", Name: ForwardChain,
			Jump: append(comment("orch: forward pod traffic"), "-j", ForwardChain),
			Rules: [][]string{
				append(append([]string{"-s", cluster}, comment("orch: from pods")...), "-j", "ACCEPT"),
				append(append([]string{"-d", cluster}, comment("orch: to pods")...), "-j", "ACCEPT"),
			},
		},
	}
}

// ensureChains makes orch's chains hold exactly their rules, in order, and
// the built-in chains jump to them at their end: after the Service
// proxy's jumps, whose REJECT of a Service without endpoints must see pod
// traffic before ORCH-FORWARD accepts it, and after Docker's rules, yet
// before a policy of DROP. It writes nothing when
// all is in place; a chain that differs is flushed and written again.
func ensureChains(ipt iptablesRunner, chains []ruleChain) (changed bool, err error) {
	for _, c := range chains {
		ok, err := chainHolds(ipt, c)
		if err != nil {
			return changed, err
		}
		if !ok {
			changed = true
			if err := ipt.ClearChain(c.Table, c.Name); err != nil {
				return changed, fmt.Errorf("network: iptables -t %s -N/-F %s: %w", c.Table, c.Name, err)
			}
			for _, rule := range c.Rules {
				if err := ipt.Append(c.Table, c.Name, rule...); err != nil {
					return changed, fmt.Errorf("network: iptables -t %s -A %s %s: %w", c.Table, c.Name, strings.Join(rule, " "), err)
				}
			}
		}
		ok, err = ipt.Exists(c.Table, c.Parent, c.Jump...)
		if err != nil {
			return changed, fmt.Errorf("network: iptables -t %s -C %s: %w", c.Table, c.Parent, err)
		}
		if !ok {
			changed = true
			if err := ipt.Append(c.Table, c.Parent, c.Jump...); err != nil {
				return changed, fmt.Errorf("network: iptables -t %s -A %s -j %s: %w", c.Table, c.Parent, c.Name, err)
			}
		}
	}
	return changed, nil
}

// chainHolds reports whether chain c exists with exactly c.Rules in order
// (told apart by their comments, as iptables prints rules its own way).
func chainHolds(ipt iptablesRunner, c ruleChain) (bool, error) {
	exists, err := ipt.ChainExists(c.Table, c.Name)
	if err != nil || !exists {
		return false, err
	}
	lines, err := ipt.List(c.Table, c.Name)
	if err != nil {
		return false, fmt.Errorf("network: iptables -t %s -S %s: %w", c.Table, c.Name, err)
	}
	var rules []string
	for _, l := range lines {
		if strings.HasPrefix(l, "-A ") {
			rules = append(rules, l)
		}
	}
	if len(rules) != len(c.Rules) {
		return false, nil
	}
	for i, rule := range c.Rules {
		if j := slices.Index(rule, "--comment"); j >= 0 && j+1 < len(rule) && !strings.Contains(rules[i], rule[j+1]) {
			return false, nil
		}
		if ok, err := ipt.Exists(c.Table, c.Name, rule...); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// deleteChains removes the jumps to orch's chains and the chains; what is
// not there is skipped.
func deleteChains(ipt iptablesRunner, chains []ruleChain) error {
	var errs []error
	for _, c := range chains {
		exists, err := ipt.ChainExists(c.Table, c.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !exists {
			continue // nothing can jump to a chain that is not there
		}
		if err := ipt.DeleteIfExists(c.Table, c.Parent, c.Jump...); err != nil {
			errs = append(errs, fmt.Errorf("network: iptables -t %s -D %s -j %s: %w", c.Table, c.Parent, c.Name, err))
		}
		if err := ipt.ClearAndDeleteChain(c.Table, c.Name); err != nil {
			errs = append(errs, fmt.Errorf("network: iptables -t %s -X %s: %w", c.Table, c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// hostSettings turns on the sysctls the cluster network needs.
type hostSettings struct {
	ipv6     bool         // the cluster has IPv6 pods: forward IPv6 too
	procSys  string       // "/proc/sys"
	modprobe func() error // loads br_netfilter; nil when there is no modprobe
	log      *slog.Logger
}

func newHostSettings(log *slog.Logger) hostSettings {
	h := hostSettings{procSys: "/proc/sys", log: log}
	if path, err := exec.LookPath("modprobe"); err == nil {
		h.modprobe = func() error {
			if out, err := exec.Command(path, "br_netfilter").CombinedOutput(); err != nil {
				return fmt.Errorf("%s br_netfilter: %w: %s", path, err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	return h
}

// ensure sets net.ipv4.ip_forward=1 and, when br_netfilter is loaded (or
// can be), net.bridge.bridge-nf-call-iptables=1. A missing br_netfilter
// is a warning: pods still reach other nodes, but Services between pods
// on one node's bridge do not work.
func (h hostSettings) ensure() (warning string, err error) {
	if err := h.set("net/ipv4/ip_forward"); err != nil {
		return "", fmt.Errorf("network: turn on IPv4 forwarding (sysctl net.ipv4.ip_forward=1): %w", err)
	}
	bridgeDir := filepath.Join(h.procSys, "net/bridge")
	if _, err := os.Stat(bridgeDir); os.IsNotExist(err) {
		if h.modprobe == nil {
			return "the br_netfilter kernel module is not loaded and there is no modprobe: traffic between pods on one node's bridge bypasses iptables, so Services between them do not work; load br_netfilter (modprobe br_netfilter, or list it in /etc/modules-load.d/) and restart orch", nil
		}
		if err := h.modprobe(); err != nil {
			return fmt.Sprintf("could not load the br_netfilter kernel module (%v): traffic between pods on one node's bridge bypasses iptables, so Services between them do not work; load it (modprobe br_netfilter, or list it in /etc/modules-load.d/)", err), nil
		}
	}
	if err := h.set("net/bridge/bridge-nf-call-iptables"); err != nil {
		return "", fmt.Errorf("network: make bridged traffic pass iptables (sysctl net.bridge.bridge-nf-call-iptables=1): %w", err)
	}
	if h.ipv6 {
		if err := h.set("net/ipv6/conf/all/forwarding"); err != nil {
			return "", fmt.Errorf("network: turn on IPv6 forwarding (sysctl net.ipv6.conf.all.forwarding=1): %w", err)
		}
		if err := h.set("net/bridge/bridge-nf-call-ip6tables"); err != nil {
			return "", fmt.Errorf("network: make bridged IPv6 traffic pass ip6tables (sysctl net.bridge.bridge-nf-call-ip6tables=1): %w", err)
		}
	}
	return "", nil
}

// set writes 1 to the sysctl at path (under procSys) unless it is 1.
func (h hostSettings) set(path string) error {
	p := filepath.Join(h.procSys, path)
	cur, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(cur)) == "1" {
		return nil
	}
	if err := os.WriteFile(p, []byte("1\n"), 0o644); err != nil {
		return err
	}
	h.log.Info("set sysctl", "name", strings.ReplaceAll(path, "/", "."), "value", 1, "was", strings.TrimSpace(string(cur)))
	return nil
}
