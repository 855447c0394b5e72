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
	IP      net.IP     // its InternalIP of PodCIDR's family (host-gw's gateway)
	VTEP    net.IP     // its IPv4 InternalIP (the VXLAN underlay)
	PodCIDR *net.IPNet // its podCIDR of one family
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

// neighEntry is a permanent ARP (or, IPv6, NDP) entry on the VXLAN device: the peer's VTEP
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
	LocalPodCIDR *net.IPNet // this node's IPv4 one; nil until the node has one
	Peers        []peer     // the IPv4 ones
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

// internalIP is the node's first InternalIP of a family (IPv4 when v4;
// nil when none).
func internalIP(n *corev1.Node, v4 bool) net.IP {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip := net.ParseIP(a.Address)
		if ip == nil || (ip.To4() != nil) != v4 {
			continue
		}
		if v4 {
			return ip.To4()
		}
		return ip
	}
	return nil
}

// podCIDRString is the node's podCIDR of a family ("" when none).
func podCIDRString(n *corev1.Node, v4 bool) string {
	for _, s := range podCIDRsOf(n) {
		if !strings.Contains(s, ":") == v4 {
			return s
		}
	}
	return ""
}

// podCIDROfFamily is the node's podCIDR of a family, as a network (nil
// when none).
func podCIDROfFamily(n *corev1.Node, v4 bool) (*net.IPNet, error) {
	s := podCIDRString(n, v4)
	if s == "" {
		return nil, nil
	}
	ip, ipnet, err := net.ParseCIDR(s)
	if err != nil {
		return nil, err
	}
	if !ip.Equal(ipnet.IP) {
		return nil, fmt.Errorf("has host bits set")
	}
	if v4 {
		ipnet.IP = ipnet.IP.To4()
	}
	return ipnet, nil
}

func overlaps(a, b *net.IPNet) bool { return a.Contains(b.IP) || b.Contains(a.IP) }

func within(outer, inner *net.IPNet) bool {
	on, _ := outer.Mask.Size()
	in, _ := inner.Mask.Size()
	return outer.Contains(inner.IP) && in >= on
}

// planRoutes computes, from the Nodes, the routes (and for vxlan the
// neighbour and FDB entries) this node needs for each of the cluster
// CIDRs (cfg.ClusterCIDR parsed; one per family), and warnings about
// nodes it cannot route to. It is pure.
//
// VXLAN carries both families over the IPv4 node addresses: an IPv6
// podCIDR is routed, like an IPv4 one, via the peer's podCIDR network
// address on orch.vxlan, whose neighbour entry is the peer's VXLAN MAC.
// host-gw routes each family via the peer's InternalIP of that family.
func planRoutes(cfg RouteConfig, clusters []*net.IPNet, nodes []*corev1.Node) (routePlan, []string) {
	p := routePlan{Backend: cfg.Backend}
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	fdb := map[string]bool{}
	for _, cluster := range clusters {
		local, peers := planFamily(cfg, cluster, nodes, warn)
		if cluster.IP.To4() != nil {
			p.LocalPodCIDR = local
			p.Peers = peers
		}
		for _, pr := range peers {
			switch cfg.Backend {
			case BackendHostGW:
				p.Routes = append(p.Routes, hostRoute{Peer: pr.Name, Dst: pr.PodCIDR, Gw: pr.IP})
			case BackendVXLAN:
				vtep, mac := pr.PodCIDR.IP, vxlanMAC(pr.VTEP)
				p.Routes = append(p.Routes, hostRoute{Peer: pr.Name, Dst: pr.PodCIDR, Gw: vtep, OnLink: true})
				p.Neighs = append(p.Neighs, neighEntry{IP: vtep, MAC: mac})
				if !fdb[mac.String()] {
					fdb[mac.String()] = true
					p.FDB = append(p.FDB, fdbEntry{MAC: mac, Dst: pr.VTEP})
				}
			}
		}
	}
	return p, warnings
}

// planFamily finds this node's podCIDR in cluster's family and the peers
// it routes that family to, with warnings about those it cannot.
func planFamily(cfg RouteConfig, cluster *net.IPNet, nodes []*corev1.Node, warn func(string, ...any)) (*net.IPNet, []peer) {
	v4 := cluster.IP.To4() != nil
	var local *net.IPNet
	for _, n := range nodes {
		if n.Name != cfg.NodeName {
			continue
		}
		cidr, err := podCIDROfFamily(n, v4)
		switch {
		case err != nil:
			warn("this node's podCIDR %q is not a valid CIDR (%v); its pods are unreachable from other nodes", podCIDRString(n, v4), err)
		case cidr != nil && !within(cluster, cidr):
			warn("this node's podCIDR %s is outside the cluster CIDR %s; give it a podCIDR inside --cluster-cidr", cidr, cluster)
		default:
			local = cidr
		}
	}
	usedIP := map[string]string{cfg.NodeIP.String(): cfg.NodeName}
	var used, peers []peer // podCIDRs taken (this node's first), and the peers routed
	if local != nil {
		used = append(used, peer{Name: cfg.NodeName, PodCIDR: local})
	}
	for _, n := range nodes {
		if n.Name == cfg.NodeName {
			continue
		}
		cidr, err := podCIDROfFamily(n, v4)
		vtep := internalIP(n, true) // the VXLAN underlay is IPv4
		ip := vtep
		if cfg.Backend == BackendHostGW {
			ip = internalIP(n, v4)
		}
		switch {
		case err != nil:
			warn("node %q has podCIDR %q, not a valid CIDR (%v); no route to its pods", n.Name, podCIDRString(n, v4), err)
			continue
		case cidr == nil:
			continue // not given one of this family yet by the node IPAM
		case ip == nil && (v4 || cfg.Backend != BackendHostGW): // vxlan's underlay is IPv4
			warn("node %q has no IPv4 InternalIP; no route to its pods until it reports one", n.Name)
			continue
		case ip == nil:
			warn("node %q has no IPv6 InternalIP; host-gw has no route to its pods' IPv6 addresses (the vxlan backend needs none)", n.Name)
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
		pr := peer{Name: n.Name, IP: ip, VTEP: vtep, PodCIDR: cidr}
		usedIP[ip.String()] = n.Name
		used = append(used, pr)
		peers = append(peers, pr)
	}
	return local, peers
}
