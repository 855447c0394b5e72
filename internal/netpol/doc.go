// Package netpol enforces NetworkPolicies (networking.k8s.io/v1) on one
// node with iptables rules of its own in the filter table, written through
// iptsync (the Service proxy's partial-sync machinery) and laid out in the
// style of kube-proxy's chains.
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
// address), ipBlocks (an ipBlock with exceptions gets a KUBE-NWPLCY- chain
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
// IPv4 only: the IPv6 addresses of pods and IPv6 ipBlocks are left out.
// No ipsets: a peer is a rule per pod address.
//
// Example, in the agent:
//
//	e, err := netpol.New(netpol.Config{NodeName: "node-1"}, client, log)
//	if err != nil {
//		return err // iptables is missing
//	}
//	go e.Start(ctx)
//	<-e.Ready() // the policies are enforced on this node
//
// and to remove every rule it wrote (uninstall, --disable-network-policy):
//
//	err := netpol.Cleanup(log)
package netpol
