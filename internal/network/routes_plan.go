package network

import (
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// peer is another node whose pods this node routes to.
type peer struct {
	Name    string
	IP      net.IP     // its IPv4 InternalIP
	PodCIDR *net.IPNet // its IPv4 podCIDR
}

// hostRoute is a route to a peer's podCIDR. host-gw: via the peer's IP on
// the interface that reaches it; vxlan (OnLink): via the peer's VTEP
// address on the VXLAN device.
type hostRoute struct {
	Peer   string // the node's name
	Dst    *net.IPNet
	Gw     net.IP
	OnLink bool
}

// neighEntry is a permanent ARP entry on the VXLAN device: the peer's VTEP
// address has the peer's VXLAN MAC.
type neighEntry struct {
	IP  net.IP
	MAC net.HardwareAddr
}

// fdbEntry sends frames for a peer's VXLAN MAC to the peer's node IP.
type fdbEntry struct {
	MAC net.HardwareAddr
	Dst net.IP
}

// routePlan is the state the host should be in.
type routePlan struct {
	Backend      string
	LocalPodCIDR *net.IPNet // this node's; nil until the node has one
	Peers        []peer
	Routes       []hostRoute
	Neighs       []neighEntry // vxlan only
	FDB          []fdbEntry   // vxlan only
}

// vxlanMAC is the MAC of the VXLAN device of the node with IPv4 address ip:
// 0e:6f followed by the address (0x0e: locally administered, unicast).
// Peers compute it from the node IP, so no annotation carries it.
func vxlanMAC(ip net.IP) net.HardwareAddr {
	ip4 := ip.To4()
	if ip4 == nil {
		return nil
	}
	return net.HardwareAddr{0x0e, 0x6f, ip4[0], ip4[1], ip4[2], ip4[3]}
}

// internalIPv4 is the node's first IPv4 InternalIP (nil when none).
func internalIPv4(n *corev1.Node) net.IP {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip := net.ParseIP(a.Address).To4(); ip != nil {
			return ip
		}
	}
	return nil
}

// podCIDRv4 is the node's IPv4 podCIDR, as a network (nil when none).
func podCIDRv4(n *corev1.Node) (*net.IPNet, error) {
	s := podCIDROf(n)
	if s == "" || strings.Contains(s, ":") {
		return nil, nil
	}
	ip, ipnet, err := net.ParseCIDR(s)
	if err != nil {
		return nil, err
	}
	if !ip.Equal(ipnet.IP) {
		return nil, fmt.Errorf("has host bits set")
	}
	ipnet.IP = ipnet.IP.To4()
	return ipnet, nil
}

func overlaps(a, b *net.IPNet) bool { return a.Contains(b.IP) || b.Contains(a.IP) }

func within(outer, inner *net.IPNet) bool {
	on, _ := outer.Mask.Size()
	in, _ := inner.Mask.Size()
	return outer.Contains(inner.IP) && in >= on
}

// planRoutes computes, from the Nodes, the routes (and for vxlan the
// neighbour and FDB entries) this node needs, and warnings about nodes it
// cannot route to. It is pure; cluster is cfg.ClusterCIDR parsed.
func planRoutes(cfg RouteConfig, cluster *net.IPNet, nodes []*corev1.Node) (routePlan, []string) {
	p := routePlan{Backend: cfg.Backend}
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }

	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		if n.Name != cfg.NodeName {
			continue
		}
		cidr, err := podCIDRv4(n)
		switch {
		case err != nil:
			warn("this node's podCIDR %q is not a valid CIDR (%v); its pods are unreachable from other nodes", podCIDROf(n), err)
		case cidr != nil && !within(cluster, cidr):
			warn("this node's podCIDR %s is outside the cluster CIDR %s; give it a podCIDR inside --cluster-cidr", cidr, cluster)
		default:
			p.LocalPodCIDR = cidr
		}
	}

	usedIP := map[string]string{cfg.NodeIP.String(): cfg.NodeName}
	var used []peer // podCIDRs taken, this node's first
	if p.LocalPodCIDR != nil {
		used = append(used, peer{Name: cfg.NodeName, PodCIDR: p.LocalPodCIDR})
	}
	for _, n := range nodes {
		if n.Name == cfg.NodeName {
			continue
		}
		cidr, err := podCIDRv4(n)
		ip := internalIPv4(n)
		switch {
		case err != nil:
			warn("node %q has podCIDR %q, not a valid CIDR (%v); no route to its pods", n.Name, podCIDROf(n), err)
			continue
		case cidr == nil:
			continue // not given one yet by the node IPAM (or IPv6 only)
		case ip == nil:
			warn("node %q has no IPv4 InternalIP; no route to its pods until it reports one", n.Name)
			continue
		case !within(cluster, cidr):
			warn("node %q has podCIDR %s, outside the cluster CIDR %s; no route to its pods (give it a podCIDR inside --cluster-cidr)", n.Name, cidr, cluster)
			continue
		}
		if other, ok := usedIP[ip.String()]; ok {
			warn("node %q has InternalIP %s, the same as node %q; no route to its pods (each node needs its own --node-ip)", n.Name, ip, other)
			continue
		}
		if i := slices.IndexFunc(used, func(u peer) bool { return overlaps(u.PodCIDR, cidr) }); i >= 0 {
			warn("node %q has podCIDR %s, which overlaps node %q's %s; no route to its pods", n.Name, cidr, used[i].Name, used[i].PodCIDR)
			continue
		}
		pr := peer{Name: n.Name, IP: ip, PodCIDR: cidr}
		usedIP[ip.String()] = n.Name
		used = append(used, pr)
		p.Peers = append(p.Peers, pr)
		switch cfg.Backend {
		case BackendHostGW:
			p.Routes = append(p.Routes, hostRoute{Peer: n.Name, Dst: cidr, Gw: ip})
		case BackendVXLAN:
			vtep, mac := cidr.IP, vxlanMAC(ip)
			p.Routes = append(p.Routes, hostRoute{Peer: n.Name, Dst: cidr, Gw: vtep, OnLink: true})
			p.Neighs = append(p.Neighs, neighEntry{IP: vtep, MAC: mac})
			p.FDB = append(p.FDB, fdbEntry{MAC: mac, Dst: ip})
		}
	}
	return p, warnings
}
