// Package proxy is the service proxy of `orch agent`: it turns Services and
// EndpointSlices into iptables rules (ip6tables for IPv6), laid out as
// kube-proxy's iptables mode lays them out, so that operators recognise the
// chains.
//
// The nat table: PREROUTING and OUTPUT jump to KUBE-SERVICES, which sends
// each cluster IP, external IP and load-balancer IP (at the service port) to
// a per-service chain and ends with a jump to KUBE-NODEPORTS for every local
// address. KUBE-SVC-<hash> spreads a service port over its ready endpoints
// (-m statistic --mode random), KUBE-SVL-<hash> over this node's endpoints
// for a Local traffic policy, KUBE-EXT-<hash> handles external traffic
// (NodePort, load-balancer and external IPs), KUBE-FW-<hash> applies
// loadBalancerSourceRanges and KUBE-SEP-<hash> DNATs to one endpoint.
// Packets marked 0x4000 by KUBE-MARK-MASQ are masqueraded by
// KUBE-POSTROUTING. The filter table rejects traffic to services without
// endpoints (KUBE-SERVICES, KUBE-EXTERNAL-SERVICES), drops external traffic
// of a Local-policy service without local endpoints, and KUBE-FORWARD
// accepts marked and established traffic. Chain names are upstream's hashes
// of "namespace/name:port" and the protocol.
//
// A LoadBalancer Service with externalTrafficPolicy Local gets its
// healthCheckNodePort served (health.go): 200 while this node has a ready
// endpoint of it, 503 otherwise, as kube-proxy.
//
// The package has three layers:
//
//   - Build (pure) computes the desired chains from an Input; iptsync
//     (shared with the network policy enforcer) turns them into
//     iptables-restore text, leaving out the per-service chains that did
//     not change since the last write (a partial sync) and deleting the
//     chains of services that are gone.
//   - iptsync's driver applies that text with `iptables-restore --noflush`
//     (ip6tables-restore for IPv6; each table one transaction) and keeps
//     the jump rules from the built-in chains with go-iptables (checked on
//     full syncs and every SyncPeriod).
//     Large inputs start the nat table with a read-only "-S", which keeps
//     iptables-nft 1.8.9 from going quadratic (see iptsync.CacheHintChains). When
//     a UDP endpoint goes away, or a UDP service gets endpoints, the stale
//     conntrack entries of the service's IPs are deleted through netlink.
//   - Proxier watches Services and EndpointSlices with client-go informers
//     and syncs, batching changes over MinSyncPeriod, rewriting everything
//     every FullSyncPeriod and after any error.
//
// With Config.Mode ModeNFTables the same model is written as upstream's
// nftables mode lays it out (nftables.go: NFTBuild, pure; nftables_tx.go:
// the table's fixed part; nftables_sync.go: full and partial syncs through
// sigs.k8s.io/knftables, stale chains deleted a second after they are
// flushed). Endpoints are spread by one numgen rule each, not upstream's
// anonymous map (see BenchmarkNFTFullSync).
//
// Dual stack: the proxy programs the IP families of Config.ClusterCIDRs
// (IPv4 alone when there is none), each on its own, as upstream's
// dual-stack kube-proxy. One Proxier, one set of informers and one health
// server serve both; each family has its own mode syncer (family.go), fed
// an Input of that family: a Service's cluster IP, external IPs,
// load-balancer ingress IPs and loadBalancerSourceRanges of the family, and
// the EndpointSlices of that addressType. A dual-stack Service gets rules
// in both families, a single-stack one in its family only. IPv6 goes
// through ip6tables (iptsync with Family IPv6) or the nftables table
// "ip6 kube-proxy", with the same layout and chain names. What differs:
// NodePorts are not served on ::1 (no route_localnet in IPv6, as
// upstream), so there is no KUBE-FIREWALL nor its nftables rule; REJECT
// answers ICMPv6 port unreachable (ip6tables' default); each family
// masquerades by its own cluster CIDR; stale UDP conntrack entries are
// deleted from the family's conntrack table. A family that fails to sync
// does not hold the other back; Ready waits for a full sync of each.
// Cleanup removes the rules of both families, whatever the proxy
// programs; a switch of --proxy-mode removes the other mode's rules in
// each family the proxy programs.
//
// Topology hints (trafficDistribution, zone hints) are not used.
//
// Tests that touch the kernel run only as root, in a network namespace of
// their own: TestMain re-executes the test binary under `unshare --net`.
//
// Example, in the agent:
//
//	clusterCIDRs, err := cidr.ParseList("--cluster-cidr", "10.42.0.0/16,fd00:42::/56")
//	...
//	p, err := proxy.New(proxy.Config{
//		NodeName:     "node-1",
//		NodeIPs:      []net.IP{net.ParseIP("192.168.1.10"), net.ParseIP("2001:db8::10")},
//		ClusterCIDRs: clusterCIDRs,
//	}, client, log)
//	if err != nil {
//		return err // iptables (or ip6tables) is missing
//	}
//	go p.Start(ctx)
//	<-p.Ready() // services work on this node
//
// and to remove every rule the proxy wrote (uninstall):
//
//	err := proxy.Cleanup(log)
package proxy
