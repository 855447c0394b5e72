// Package dns is orch's cluster DNS, in place of CoreDNS: every agent runs
// a Server that answers the cluster domain from client-go informer caches
// of Services and EndpointSlices and forwards every other name to the
// node's upstream resolvers.
//
// The cluster zone follows the Kubernetes DNS specification, schema 1.1.0
// (kubernetes/dns docs/specification.md), as CoreDNS's kubernetes plugin
// with "pods insecure" serves it:
//
//	<svc>.<ns>.svc.<zone>                A/AAAA: the ClusterIPs; headless: each ready endpoint
//	                                     (every endpoint with publishNotReadyAddresses);
//	                                     ExternalName: CNAME, followed for A/AAAA
//	<host>.<svc>.<ns>.svc.<zone>         A/AAAA of the endpoint whose hostname, or dashed
//	                                     address (10-42-0-7), is <host>
//	_<port>._<proto>.<svc>.<ns>.svc.<zone>  SRV per named port: to <svc>... for ClusterIP
//	                                     services, to each endpoint's name for headless ones,
//	                                     with the addresses in the additional section
//	<a-b-c-d>.<ns>.pod.<zone>            A (AAAA for dashed IPv6): any well-formed address
//	dns-version.<zone>                   TXT "1.1.0"
//	<reversed>.in-addr.arpa / ip6.arpa   PTR of ClusterIPs and headless endpoints
//
// Names in the zone that do not exist get NXDOMAIN, names that exist
// without records of the asked type NOERROR with no answers; both carry
// the zone's SOA. Answers of the zone are authoritative, with Config.TTL.
// Until the informers have synced, names of the zone get SERVFAIL so that
// clients retry instead of caching a wrong denial.
//
// Other names (and reverse names the zone does not know) go to the
// nameservers of resolv.conf, less our own addresses, in order, over UDP
// and again over TCP when truncated. Their answers are cached for their
// TTL (denials for the SOA's minimum, RFC 2308) in a bounded cache. When
// every upstream fails the answer is SERVFAIL.
//
// Replies fit the client's buffer (512 bytes, or its EDNS size) over UDP,
// with TC set when records had to go. Metrics are served in Prometheus
// text format on Config.MetricsAddr at /metrics, with /ready.
//
// A Server is one component with Start(ctx) error:
//
//	srv, err := dns.New(dns.Config{
//		Domain:      "cluster.local",
//		Listen:      []string{"10.42.0.1:53"}, // may not exist yet: bound with IP_FREEBIND
//		MetricsAddr: "10.42.0.1:9153",
//	}, clientset, log)
//	if err != nil {
//		return err
//	}
//	go func() { errc <- srv.Start(ctx) }()
//	<-srv.Ready() // informers synced, listeners up
package dns

// Ports of the node resolvers: DNS over UDP and TCP, and metrics.
const (
	Port        = 53
	MetricsPort = 9153
)
