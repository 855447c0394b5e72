package netpol

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"orch/internal/iptsync"
)

// setBudget is how many ipsets the enforcer uses at most, shared by the IP
// families: the kernel holds 256 by default (CONFIG_IP_SET_MAX, ip_set's
// max_sets), for every program of the host. Past it a family's rules
// name each peer address instead.
const setBudget = 192

// setOp is one change to the kernel's sets.
type setOp struct {
	kind string // "create", "add", "del", "destroy"
	set  string
	ip   string // add, del
}

// planSets are the changes that make the kernel's sets of one family,
// have (name → members, only sets of ours), hold want: before writes the
// sets (created, then members added before others go) ahead of the rules
// that match them; after destroys the sets no rule needs any more, once
// the rules are written. It is pure.
func planSets(want []Set, have map[string][]string) (before, after []setOp) {
	wanted := map[string]bool{}
	for _, s := range want {
		wanted[s.Name] = true
		members, ok := have[s.Name]
		if !ok {
			before = append(before, setOp{kind: "create", set: s.Name})
		}
		in, wantIn := setOf(members), setOf(s.Members)
		for _, ip := range s.Members {
			if !in[ip] {
				before = append(before, setOp{kind: "add", set: s.Name, ip: ip})
			}
		}
		for _, ip := range members {
			if !wantIn[ip] {
				before = append(before, setOp{kind: "del", set: s.Name, ip: ip})
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if !wanted[name] {
			after = append(after, setOp{kind: "destroy", set: name})
		}
	}
	return before, after
}

func setOf(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, s := range list {
		out[s] = true
	}
	return out
}

// ipsetsAvailable reports whether the kernel has ip_set (and so, as every
// kernel that has it builds it, the iptables match of sets).
func ipsetsAvailable() bool {
	_, _, err := netlink.IpsetProtocol()
	return err == nil
}

// kernelSets reads and writes the sets of one family through netlink.
type kernelSets struct{ family iptsync.Family }

// afOf is the address family of f's sets.
func afOf(f iptsync.Family) uint8 {
	if f == iptsync.IPv6 {
		return unix.AF_INET6
	}
	return unix.AF_INET
}

// list returns the sets of ours of the family with their members.
func (k kernelSets) list() (map[string][]string, error) {
	all, err := netlink.IpsetListAll()
	if err != nil {
		return nil, fmt.Errorf("list ipsets: %w", err)
	}
	out := map[string][]string{}
	family := map[string]uint8{}
	for _, s := range all {
		// A big set comes in more than one message; the first says
		// the family.
		if s.Family != 0 {
			family[s.SetName] = s.Family
		}
		if !isOwnedSet(s.SetName) || family[s.SetName] != afOf(k.family) {
			continue
		}
		members := out[s.SetName]
		for _, e := range s.Entries {
			members = append(members, e.IP.String())
		}
		out[s.SetName] = members
	}
	return out, nil
}

// apply carries out ops in order; it stops at the first that fails.
func (k kernelSets) apply(ops []setOp) error {
	for _, op := range ops {
		var err error
		switch op.kind {
		case "create":
			err = netlink.IpsetCreate(op.set, "hash:ip", netlink.IpsetCreateOptions{Family: afOf(k.family)})
		case "add": // Replace: no error when it is there already (nor, for del, when not)
			err = netlink.IpsetAdd(op.set, &netlink.IPSetEntry{IP: net.ParseIP(op.ip), Replace: true})
		case "del":
			err = netlink.IpsetDel(op.set, &netlink.IPSetEntry{IP: net.ParseIP(op.ip), Replace: true})
		case "destroy":
			err = netlink.IpsetDestroy(op.set)
		default:
			err = errors.New("unknown operation")
		}
		if err != nil {
			return fmt.Errorf("ipset %s: %w", strings.TrimSpace(op.kind+" "+op.set+" "+op.ip), err)
		}
	}
	return nil
}

// cleanupSets destroys the sets of ours of both families; the rules that
// match them must be gone. Without ip_set there are none.
func cleanupSets() error {
	if !ipsetsAvailable() {
		return nil
	}
	var errs []error
	for _, f := range []iptsync.Family{iptsync.IPv4, iptsync.IPv6} {
		k := kernelSets{family: f}
		have, err := k.list()
		if err == nil {
			_, after := planSets(nil, have)
			err = k.apply(after)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
