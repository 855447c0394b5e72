// Package network holds what orch knows about a node's networks: the host's
// own address (HostIP) and the pod network on the node.
//
// Pods on a node share one Linux bridge (orch0) on the node's spec.podCIDRs,
// the /24 (and, dual stack, the /64) the server's node IPAM gives it out of
// --cluster-cidr. The
// container runtime (containerd's CRI plugin) sets the network up through
// the standard CNI plugins (containernetworking/plugins, which orch carries:
// package payload) from one conflist that orch writes into the runtime's CNI
// conf dir:
//
//   - bridge: a veth per pod into orch0, which holds the gateway (the
//     first address of the podCIDR); hairpin mode so that a pod reaches
//     itself through a Service; no masquerade (traffic that leaves the
//     cluster CIDR is the cluster network's job, not the node's);
//   - host-local IPAM on the podCIDR, a default route via the gateway;
//   - portmap for hostPort, with SNAT so that hairpin and localhost
//     connections to a hostPort work.
//
// The runtime adds the loopback interface itself (containerd's CRI plugin
// always attaches the loopback plugin before the conflist), so the conflist
// has no loopback entry.
//
// BridgeConfList builds the conflist (pure); DefaultMTU reads the MTU of
// the interface of the host's default route. CNIConfigWriter watches the
// agent's own Node and writes the conflist atomically when its podCIDR is
// set or changes, then tells the runtime the pod CIDR (CRI
// UpdateRuntimeConfig):
//
//	w := network.NewCNIConfigWriter(network.CNIConfig{
//		NodeName: "node-1",
//		ConfDir:  "/var/lib/orch/agent/etc/cni/net.d",
//	}, client, runtime, log)
//	go w.Start(ctx)
//	<-w.Ready() // the conflist is in place: pods can get an IP
//
// Host settings the plugins depend on: the bridge plugin (isGateway) turns
// net.ipv4.ip_forward on. Where br_netfilter is loaded
// (bridge-nf-call-iptables=1), frames between two pods on the bridge pass
// iptables' FORWARD chain, so a FORWARD policy of DROP (as Docker sets it)
// cuts pods off from each other unless a rule accepts traffic in and out
// of the bridge: the Router's ORCH-FORWARD chain (below) does.
//
// # Routes between nodes
//
// Each node's pods live on its own podCIDRs (a /24 of --cluster-cidr); the
// Router makes the pods of one node reach the pods of every other node,
// with the pods' own addresses (no NAT between pods), and lets pods reach
// the world beyond the cluster CIDR through their node's address. It
// watches all Nodes and, for every other node with a spec.podCIDR and an
// IPv4 InternalIP, programs one of two backends:
//
//   - vxlan (the default, as flannel and k3s): one VXLAN device, orch.vxlan
//     (VNI 1, UDP port 8472, learning off, local = the node IP, on the
//     interface that holds the node IP, MTU 50 below it; pods' MTU must be
//     lowered by MTUOverhead). The device holds this node's podCIDR network
//     address as a /32 and a MAC made from the node IP (0e:6f:<IPv4>), so
//     peers compute each other's MAC without annotations. Per peer: a route
//     "<podCIDR> via <peer podCIDR network address> dev orch.vxlan onlink",
//     a permanent neighbour entry for that address with the peer's MAC, and
//     an FDB entry that sends the peer's MAC to the peer's InternalIP. It
//     works across routed (L3) networks; UDP 8472 must pass between nodes.
//   - host-gw: a route "<podCIDR> via <peer InternalIP>" per peer; no
//     encapsulation, full MTU, but every node must be on one directly
//     connected subnet (a peer that is not is skipped with a warning that
//     says to use vxlan).
//   - none: the Router changes nothing on the host (no routes, sysctls or
//     iptables rules) and is Ready at once; for a cluster whose network
//     between nodes and NAT to the outside are someone else's (a CNI the
//     user installs, or routes set by the site's routers).
//
// Dual stack (--cluster-cidr with an IPv4 and an IPv6 range): a node has
// a podCIDR of each family, the conflist gives host-local a range of each
// (so every pod gets two addresses, the gateways on orch0) and a default
// route of each. The vxlan backend carries both families over the nodes'
// IPv4 addresses: an IPv6 podCIDR is routed like an IPv4 one, "via <peer
// IPv6 podCIDR network address> dev orch.vxlan onlink", with a permanent
// IPv6 neighbour entry holding the peer's VXLAN MAC (so one FDB entry per
// peer serves both). host-gw routes the IPv6 podCIDR via the peer's IPv6
// InternalIP and skips, with a warning, a peer without one. The masquerade
// and forward chains below are written with ip6tables too, for the IPv6
// cluster CIDR, and net.ipv6.conf.all.forwarding and
// net.bridge.bridge-nf-call-ip6tables are set. The underlay is IPv4: a
// node needs an IPv4 InternalIP.
//
// orch's routes carry their own rtnetlink protocol number (RouteProtocol,
// shown as "proto 123" by ip route), so the Router removes the routes of
// nodes that left or changed, and only those, and CleanupRoutes finds them
// after a restart. Everything on orch.vxlan is orch's.
//
// With vxlan and host-gw the Router also sets net.ipv4.ip_forward=1 and
// net.bridge.bridge-nf-call-iptables=1 (loading br_netfilter with modprobe
// when it is missing and modprobe exists) and keeps two iptables chains of
// its own, jumped to from the end of the built-in ones (after the Service
// proxy's jumps, so that its REJECT of Services without endpoints comes
// first):
//
//	nat ORCH-POSTROUTING (from POSTROUTING):
//	  -s <cluster CIDR> -d <cluster CIDR> -j RETURN        pod to pod: never NAT
//	  -s <cluster CIDR> ! -d 224.0.0.0/4 -j MASQUERADE --random-fully
//	filter ORCH-FORWARD (from FORWARD):
//	  -s <cluster CIDR> -j ACCEPT
//	  -d <cluster CIDR> -j ACCEPT                          so a FORWARD policy of DROP
//	                                                       (as Docker sets) lets pods through
//
// The Router syncs on every change to a Node's podCIDR or addresses, every
// Resync (5 minutes), and again with backoff after an error; it is Ready
// once the first sync succeeded:
//
//	r, err := network.NewRouter(network.RouteConfig{
//		NodeName:    "node-1",
//		NodeIP:      net.ParseIP("192.168.1.10"),
//		ClusterCIDR: "10.42.0.0/16",
//	}, client, log)
//	go r.Start(ctx)
//	<-r.Ready()
//
// CleanupRoutes removes orch.vxlan, every route with RouteProtocol and the
// two chains with their jumps (orch's uninstall, or a change of backend).
//
// The Service proxy is internal/proxy; the cluster DNS, internal/dns.
package network
