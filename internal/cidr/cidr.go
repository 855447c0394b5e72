// Package cidr holds what the network and the controllers both derive from
// a node's pod CIDR.
package cidr

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// GatewayIP is the pod network's gateway on a node with podCIDR: its
// first address, held by the bridge. The node's cluster DNS answers there
// too.
func GatewayIP(podCIDR string) (netip.Addr, error) {
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	return prefix.Masked().Addr().Next(), nil
}

// ParseList parses a --cluster-cidr or --service-cidr value: one CIDR, or
// two of different families separated by a comma (dual stack, the first
// being the primary family), as upstream's flags. Each comes back masked.
func ParseList(flag, value string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(value, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s %q: %q is not a CIDR (e.g. 10.42.0.0/16, or 10.42.0.0/16,fd00:42::/56 for dual stack)", flag, value, s)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("%s %q: %s is an IPv4-mapped IPv6 range; give the IPv4 range", flag, value, p)
		}
		out = append(out, p.Masked())
	}
	switch {
	case len(out) > 2:
		return nil, fmt.Errorf("%s %q: at most two CIDRs, one IPv4 and one IPv6", flag, value)
	case len(out) == 2 && out[0].Addr().Is4() == out[1].Addr().Is4():
		return nil, fmt.Errorf("%s %q: two CIDRs must be one IPv4 and one IPv6 (dual stack)", flag, value)
	}
	return out, nil
}

// ParseNets is ParseList with each range as a *net.IPNet (IPv4 ones in
// their 4-byte form).
func ParseNets(flag, value string) ([]*net.IPNet, error) {
	prefixes, err := ParseList(flag, value)
	if err != nil {
		return nil, err
	}
	out := make([]*net.IPNet, len(prefixes))
	for i, p := range prefixes {
		_, out[i], _ = net.ParseCIDR(p.String())
	}
	return out, nil
}

// Of returns the prefix of prefixes in one family (IPv4 when v4 is
// true), and whether there is one.
func Of(prefixes []netip.Prefix, v4 bool) (netip.Prefix, bool) {
	for _, p := range prefixes {
		if p.Addr().Is4() == v4 {
			return p, true
		}
	}
	return netip.Prefix{}, false
}
