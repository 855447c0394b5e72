package dns

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// clusterObjects is a small cluster: a ClusterIP, a dual-stack, headless
// (IPv4 and IPv6), publishNotReadyAddresses and ExternalName services.
func clusterObjects() []runtime.Object {
	dual := service("ns1", "dual", "10.43.0.30", port("http", corev1.ProtocolTCP, 80))
	dual.Spec.ClusterIPs = []string{"10.43.0.30", "fd00:43::30"}
	pnr := service("ns1", "pnr", corev1.ClusterIPNone)
	pnr.Spec.PublishNotReadyAddresses = true
	http := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	return []runtime.Object{
		service("default", "kubernetes", "10.43.0.1", port("https", corev1.ProtocolTCP, 443)),
		service("ns1", "web", "10.43.0.20", port("http", corev1.ProtocolTCP, 80), port("dns", corev1.ProtocolUDP, 53), port("", corev1.ProtocolTCP, 9999)),
		slice("ns1", "web", "web-abc", discoveryv1.AddressTypeIPv4, http, ep{"10.42.0.9", "", true}),
		dual,
		service("ns1", "headless", corev1.ClusterIPNone, port("http", corev1.ProtocolTCP, 8080)),
		slice("ns1", "headless", "headless-1", discoveryv1.AddressTypeIPv4, http,
			ep{"10.42.0.5", "web-0", true}, ep{"10.42.0.6", "", true}, ep{"10.42.0.7", "web-2", false}),
		slice("ns1", "headless", "headless-2", discoveryv1.AddressTypeIPv6, http, ep{"fd00:42::5", "web-0", true}),
		pnr,
		slice("ns1", "pnr", "pnr-1", discoveryv1.AddressTypeIPv4, nil, ep{"10.42.1.9", "", false}),
		externalName("ns1", "ext", "foo.example.com"),
		externalName("ns1", "ext-in", "web.ns1.svc.cluster.local."),
		externalName("ns1", "loop-a", "loop-b.ns1.svc.cluster.local"),
		externalName("ns1", "loop-b", "LOOP-A.ns1.svc.cluster.local"),
	}
}

func TestClusterZone(t *testing.T) {
	up := startUpstream(t)
	s, _ := startServer(t, Config{Upstreams: []string{up.addr}}, clusterObjects()...)
	const (
		zone = ".cluster.local."
		soa  = "cluster.local. SOA"
	)
	for _, tc := range []struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string // rrStrings; nil = no answer (negative: SOA expected)
		extra  []string
	}{
		{"kubernetes.default.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"kubernetes.default.svc.cluster.local. A 10.43.0.1"}, nil},
		{"web.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"web.ns1.svc.cluster.local. A 10.43.0.20"}, nil},
		{"WEB.Ns1.SVC.Cluster.Local.", dns.TypeA, dns.RcodeSuccess, []string{"WEB.Ns1.SVC.Cluster.Local. A 10.43.0.20"}, nil},
		{"web.ns1.svc" + zone, dns.TypeAAAA, dns.RcodeSuccess, nil, nil},
		{"web.ns1.svc" + zone, dns.TypeTXT, dns.RcodeSuccess, nil, nil},
		{"dual.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"dual.ns1.svc.cluster.local. A 10.43.0.30"}, nil},
		{"dual.ns1.svc" + zone, dns.TypeAAAA, dns.RcodeSuccess, []string{"dual.ns1.svc.cluster.local. AAAA fd00:43::30"}, nil},
		// Headless: ready endpoints only, unless publishNotReadyAddresses.
		{"headless.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"headless.ns1.svc.cluster.local. A 10.42.0.5", "headless.ns1.svc.cluster.local. A 10.42.0.6"}, nil},
		{"headless.ns1.svc" + zone, dns.TypeAAAA, dns.RcodeSuccess, []string{"headless.ns1.svc.cluster.local. AAAA fd00:42::5"}, nil},
		{"pnr.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"pnr.ns1.svc.cluster.local. A 10.42.1.9"}, nil},
		{"web-0.headless.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"web-0.headless.ns1.svc.cluster.local. A 10.42.0.5"}, nil},
		{"web-0.headless.ns1.svc" + zone, dns.TypeAAAA, dns.RcodeSuccess, []string{"web-0.headless.ns1.svc.cluster.local. AAAA fd00:42::5"}, nil},
		{"10-42-0-6.headless.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"10-42-0-6.headless.ns1.svc.cluster.local. A 10.42.0.6"}, nil},
		{"web-2.headless.ns1.svc" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"web-9.headless.ns1.svc" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		// SRV: ClusterIP targets the service, headless each endpoint.
		{"_http._tcp.web.ns1.svc" + zone, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_http._tcp.web.ns1.svc.cluster.local. SRV 0 100 80 web.ns1.svc.cluster.local."},
			[]string{"web.ns1.svc.cluster.local. A 10.43.0.20"}},
		{"_dns._udp.web.ns1.svc" + zone, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_dns._udp.web.ns1.svc.cluster.local. SRV 0 100 53 web.ns1.svc.cluster.local."},
			[]string{"web.ns1.svc.cluster.local. A 10.43.0.20"}},
		{"_HTTP._TCP.web.ns1.svc" + zone, dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_HTTP._TCP.web.ns1.svc.cluster.local. SRV 0 100 80 web.ns1.svc.cluster.local."},
			[]string{"web.ns1.svc.cluster.local. A 10.43.0.20"}},
		{"_http._tcp.headless.ns1.svc" + zone, dns.TypeSRV, dns.RcodeSuccess,
			[]string{
				"_http._tcp.headless.ns1.svc.cluster.local. SRV 0 50 8080 10-42-0-6.headless.ns1.svc.cluster.local.",
				"_http._tcp.headless.ns1.svc.cluster.local. SRV 0 50 8080 web-0.headless.ns1.svc.cluster.local.",
			},
			[]string{
				"10-42-0-6.headless.ns1.svc.cluster.local. A 10.42.0.6",
				"web-0.headless.ns1.svc.cluster.local. A 10.42.0.5",
				"web-0.headless.ns1.svc.cluster.local. AAAA fd00:42::5",
			}},
		{"_dns._tcp.web.ns1.svc" + zone, dns.TypeSRV, dns.RcodeNameError, nil, nil},
		{"_nope._tcp.web.ns1.svc" + zone, dns.TypeSRV, dns.RcodeNameError, nil, nil},
		{"_http._tcp.web.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"_tcp.web.ns1.svc" + zone, dns.TypeSRV, dns.RcodeSuccess, nil, nil},
		{"_sctp.web.ns1.svc" + zone, dns.TypeSRV, dns.RcodeNameError, nil, nil},
		// ExternalName: CNAME, chased through the upstream or the zone.
		{"ext.ns1.svc" + zone, dns.TypeCNAME, dns.RcodeSuccess, []string{"ext.ns1.svc.cluster.local. CNAME foo.example.com."}, nil},
		{"ext.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"ext.ns1.svc.cluster.local. CNAME foo.example.com.", "foo.example.com. A 192.0.2.10"}, nil},
		{"ext-in.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"ext-in.ns1.svc.cluster.local. CNAME web.ns1.svc.cluster.local.", "web.ns1.svc.cluster.local. A 10.43.0.20"}, nil},
		{"loop-a.ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, []string{"loop-a.ns1.svc.cluster.local. CNAME loop-b.ns1.svc.cluster.local.", "loop-b.ns1.svc.cluster.local. CNAME loop-a.ns1.svc.cluster.local."}, nil},
		// Pods, insecure: any well-formed dashed address.
		{"10-1-2-3.ns1.pod" + zone, dns.TypeA, dns.RcodeSuccess, []string{"10-1-2-3.ns1.pod.cluster.local. A 10.1.2.3"}, nil},
		{"10-1-2-3.ns1.pod" + zone, dns.TypeAAAA, dns.RcodeSuccess, nil, nil},
		{"fd00--5.ns1.pod" + zone, dns.TypeAAAA, dns.RcodeSuccess, []string{"fd00--5.ns1.pod.cluster.local. AAAA fd00::5"}, nil},
		{"1-2-3.ns1.pod" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"10-1-2-300.ns1.pod" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		// Schema version, apex, empty non-terminals.
		{"dns-version" + zone, dns.TypeTXT, dns.RcodeSuccess, []string{`dns-version.cluster.local. TXT "1.1.0"`}, nil},
		{"cluster.local.", dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"svc" + zone, dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"ns1.svc" + zone, dns.TypeA, dns.RcodeSuccess, nil, nil},
		{"nons.svc" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		// Names that do not exist, e.g. search-path expansions.
		{"missing.ns1.svc" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"example.com.ns1.svc" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"example.com.svc" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"example.com" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		{"a.b.c.web.ns1.svc" + zone, dns.TypeA, dns.RcodeNameError, nil, nil},
		// Reverse: ClusterIPs and headless endpoints.
		{"20.0.43.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"20.0.43.10.in-addr.arpa. PTR web.ns1.svc.cluster.local."}, nil},
		{"5.0.42.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"5.0.42.10.in-addr.arpa. PTR web-0.headless.ns1.svc.cluster.local."}, nil},
		{"6.0.42.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"6.0.42.10.in-addr.arpa. PTR 10-42-0-6.headless.ns1.svc.cluster.local."}, nil},
		{mustReverse(t, "fd00:43::30"), dns.TypePTR, dns.RcodeSuccess, []string{mustReverse(t, "fd00:43::30") + " PTR dual.ns1.svc.cluster.local."}, nil},
	} {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(network+"/"+dns.TypeToString[tc.qtype]+"/"+strings.TrimSuffix(tc.name, "."), func(t *testing.T) {
				r := query(t, network, s.Addrs()[0], tc.name, tc.qtype)
				if r.Rcode != tc.rcode {
					t.Fatalf("rcode %s, want %s\n%v", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode], r)
				}
				if got := rrStrings(r.Answer); !slices.Equal(got, tc.answer) && (len(got) > 0 || len(tc.answer) > 0) {
					t.Errorf("answer\n got %q\nwant %q", got, tc.answer)
				}
				if got := rrStrings(r.Extra); !slices.Equal(got, tc.extra) && (len(got) > 0 || len(tc.extra) > 0) {
					t.Errorf("additional\n got %q\nwant %q", got, tc.extra)
				}
				if !r.Authoritative {
					t.Error("answer is not authoritative")
				}
				if len(r.Answer) > 0 {
					if ttl := r.Answer[0].Header().Ttl; ttl != DefaultTTL {
						t.Errorf("TTL %d, want %d", ttl, DefaultTTL)
					}
				}
				negative := len(r.Answer) == 0
				if hasSOA := len(r.Ns) == 1 && strings.HasPrefix(rrStrings(r.Ns)[0], soa); negative != hasSOA {
					t.Errorf("authority %q; want the zone's SOA exactly when the answer is empty", rrStrings(r.Ns))
				}
				if r.Question[0].Name != tc.name {
					t.Errorf("question %q, want %q as asked", r.Question[0].Name, tc.name)
				}
			})
		}
	}
}

func mustReverse(t *testing.T, ip string) string {
	r, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestApexSOA checks the SOA of the zone apex.
func TestApexSOA(t *testing.T) {
	s, _ := startServer(t, Config{Domain: "Cluster.Local", TTL: 30})
	r := query(t, "udp", s.Addrs()[0], "cluster.local.", dns.TypeSOA)
	if len(r.Answer) != 1 {
		t.Fatalf("answer %v, want one SOA", r.Answer)
	}
	soa, ok := r.Answer[0].(*dns.SOA)
	if !ok || soa.Ns != "ns.dns.cluster.local." || soa.Minttl != 30 || soa.Hdr.Ttl != 30 || soa.Serial == 0 {
		t.Errorf("SOA %v, want ns.dns.cluster.local., minimum and TTL 30, a serial", r.Answer[0])
	}
}
