// Package cidr holds what the network and the controllers both derive from
// a node's pod CIDR.
package cidr

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
		return netip.Addr{}, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	return prefix.Masked().Addr().Next(), nil
}
