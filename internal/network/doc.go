// Package network holds what orch knows about a node's networks: the host's
// own address (HostIP) and the pod network on the node.
//
// Pods on a node share one Linux bridge (orch0) on the node's spec.podCIDR,
// the /24 the server's node IPAM gives it out of --cluster-cidr. The
// container runtime (containerd's CRI plugin) sets the network up through
// the standard CNI plugins (Debian's containernetworking-plugins in
// /usr/lib/cni) from one conflist that orch writes into the runtime's CNI
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
// of the bridge; orch does not add that rule yet.
//
// Routes between nodes, masquerade and the iptables rules of Services are
// the cluster network's part and are not here yet.
package network
