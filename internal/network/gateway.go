package network

import (
	"fmt"
	"net/netip"
)

// GatewayIP is the pod network's gateway on a node with podCIDR: its
// first address, held by the bridge. The node's cluster DNS answers there
// too.
func GatewayIP(podCIDR string) (netip.Addr, error) {
	prefix, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("network: pod CIDR %q: %w", podCIDR, err)
	}
	return prefix.Masked().Addr().Next(), nil
}
