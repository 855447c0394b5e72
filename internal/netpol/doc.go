// Package netpol enforces NetworkPolicies (networking.k8s.io/v1) on one
// node with iptables (and, for IPv6, ip6tables) rules of its own in the
// filter table, written through iptsync (the Service proxy's partial-sync
// machinery) and laid out in the style of kube-proxy's chains.
//
// FORWARD and INPUT jump first to KUBE-NP-FORWARD and KUBE-NP-INPUT. Those
// let the packets of established connections pass (so replies of allowed
// connections always do), then send the packets from and to each pod of
// this node that a policy isolates to the pod's chain:
//
//   - KUBE-NP-IN-<hash> (ingress, from FORWARD): the mark 0x10000 is
//     cleared, the chain of every policy that selects the pod runs and
//     marks what it allows, and unmarked packets are rejected. The node's
//     own traffic to its pods (the kubelet's probes) leaves through
//     OUTPUT, which is not hooked, so it always passes.
//   - KUBE-NP-OUT-<hash> (egress, from FORWARD and from INPUT for traffic
//     to the pod's own node, where the cluster DNS answers): the same with
//     the mark 0x20000.
//
// A policy's chain, KUBE-NWPLCY-<hash of ns/name/direction>, has one rule
// per peer and port: pods by podSelector and namespaceSelector (each pod's
// address, or, with ipsets, one set per rule), ipBlocks (an ipBlock with exceptions gets a KUBE-NWPLCY- chain
// of its own that returns for them), ports by number, range (endPort) or
// name (resolved on the isolated pod for ingress, on the peer pods for
// egress), TCP, UDP and SCTP. A policy without rules in a direction it
// names denies that direction (default deny); policyTypes default as the
// API defaults them. Pods on the host's network are neither selected nor
// peers, as upstream. Rules are evaluated after the Service proxy's DNAT,
// so a policy sees a Service's endpoint, not its cluster IP.
//
// The package has three layers, as the proxy: Build (pure) computes the
// chains from an Input; iptsync writes only the chains that changed and
// deletes the chains of pods and policies that are gone; Enforcer watches
// NetworkPolicies, Pods and Namespaces with client-go informers and syncs
// on every change, and every Resync to check its jumps.
//
// Dual stack: the enforcer programs each IP family of
// Config.ClusterCIDRs (IPv4 alone when it is empty) with a rule set of its
// own, built from that family's pod addresses and ipBlocks (exceptions
// included) and written through iptsync with one Syncer per family:
// IPv4 with iptables-restore, IPv6 with ip6tables-restore. The chains have
// the same names and the same marks in both (the kernel keeps the
// families' tables apart); an IPv6 pod address is a /128, and the IPv6
// pod chains reject with icmp6-port-unreachable where the IPv4 ones use
// icmp-port-unreachable. So a pod with two addresses is isolated in both
// families by the same policies; a pod with an address of one family only
// is isolated (and a peer) in that family only; an ipBlock, and its
// exceptions, allow only in their own family, and a rule whose peers are
// all of the other family allows nothing in this one. The IPv6
// KUBE-NP-FORWARD and KUBE-NP-INPUT also let neighbor solicitations and
// advertisements pass before any pod's chain: neighbor discovery is
// IPv6's ARP, untracked by conntrack and sent from a pod's own address,
// and without it an isolated pod could reach nothing over IPv6. Then
// they refuse all other traffic from or to a link-local address (fe80::/10)
// on the pods' bridge (Config.PodBridge): every pod has one, no pod's rule
// names it, and it would reach an isolated pod past its chain. When
// ip6tables is missing on a dual-stack node, New fails rather than leave
// the pods open over IPv6. A family whose sync fails does not hold back
// the other's; Ready waits for both.
//
// ipsets: when the kernel has ip_set, a rule's pod peers are one set of
// type hash:ip (KUBE-NP-SRC-<hash> for ingress, KUBE-NP-DST-<hash> for
// egress; the hash names the policy, direction, rule and family, since
// sets are one namespace for both families), matched with -m set by one
// rule per port. A rule with selectors has its set even while it is
// empty, so pods that come, go or change address change a set and never
// a chain. Each sync makes and fills the sets first (members added before
// others go), writes the chains, then destroys the sets no chain matches.
// Egress ports by name are resolved on each peer pod and keep a rule per
// pod. Without ip_set, past setBudget sets (the kernel holds 256 for the
// whole host), or when a set cannot be made, a family's rules name each
// peer address, as Build does with Input.MaxSets 0.
//
// Example, in the agent (clusterCIDRs from cidr.ParseList of --cluster-cidr,
// e.g. 10.42.0.0/16,fd00:42::/56):
//
//	e, err := netpol.New(netpol.Config{NodeName: "node-1", ClusterCIDRs: clusterCIDRs}, client, log)
//	if err != nil {
//		return err // iptables (or, for IPv6, ip6tables) is missing
//	}
//	go e.Start(ctx)
//	<-e.Ready() // the policies are enforced on this node
//
// and to remove every rule it wrote in both families (uninstall,
// --disable-network-policy; a host without ip6tables has no IPv6 rules to
// remove, which is not an error):
//
//	err := netpol.Cleanup(log)
package netpol
