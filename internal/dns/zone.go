package dns

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// DNSSchemaVersion is the version of the Kubernetes DNS specification the
// zone follows, served as TXT at dns-version.<zone>.
const DNSSchemaVersion = "1.1.0"

// zone answers names of the cluster domain from the informer indexers.
type zone struct {
	origin string // canonical: lower case, trailing dot
	ttl    uint32
	svcs   cache.Indexer
	slices cache.Indexer
	serial atomic.Uint32 // of the SOA: the time of the last change seen
}

// result is the zone's answer to one question.
type result struct {
	rcode  int
	answer []dns.RR
	extra  []dns.RR
	cname  string // an ExternalName target the answer points to
}

func newZone(origin string, ttl uint32, svcs, slices cache.Indexer) *zone {
	z := &zone{origin: origin, ttl: ttl, svcs: svcs, slices: slices}
	z.touch()
	return z
}

// touch records a change of the zone's data.
func (z *zone) touch() { z.serial.Store(uint32(time.Now().Unix())) }

// contains reports whether the canonical name lname is in the zone.
func (z *zone) contains(lname string) bool {
	return lname == z.origin || strings.HasSuffix(lname, "."+z.origin)
}

func (z *zone) hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: z.ttl}
}

// soa is the zone's SOA, for the authority section of negative answers.
func (z *zone) soa() dns.RR {
	return &dns.SOA{
		Hdr: z.hdr(z.origin, dns.TypeSOA),
		Ns:  "ns.dns." + z.origin, Mbox: "hostmaster." + z.origin,
		Serial: z.serial.Load(), Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: z.ttl,
	}
}

// addr is the A or AAAA record of a for name, or nil when qtype asks for
// the other family.
func (z *zone) addr(name string, a netip.Addr, qtype uint16) dns.RR {
	switch {
	case a.Is4() && (qtype == dns.TypeA || qtype == dns.TypeANY):
		return &dns.A{Hdr: z.hdr(name, dns.TypeA), A: a.AsSlice()}
	case a.Is6() && (qtype == dns.TypeAAAA || qtype == dns.TypeANY):
		return &dns.AAAA{Hdr: z.hdr(name, dns.TypeAAAA), AAAA: a.AsSlice()}
	}
	return nil
}

var (
	nxdomain = result{rcode: dns.RcodeNameError}
	nodata   = result{rcode: dns.RcodeSuccess}
)

// lookup answers qtype for qname, whose canonical form lname is in the zone.
func (z *zone) lookup(qname, lname string, qtype uint16) result {
	rel := strings.TrimSuffix(strings.TrimSuffix(lname, z.origin), ".")
	if rel == "" {
		if qtype == dns.TypeSOA {
			return result{answer: []dns.RR{z.soa()}}
		}
		return nodata
	}
	labels := dns.SplitDomainName(rel)
	n := len(labels)
	switch {
	case n == 1 && labels[0] == "dns-version":
		if qtype != dns.TypeTXT && qtype != dns.TypeANY {
			return nodata
		}
		return result{answer: []dns.RR{&dns.TXT{Hdr: z.hdr(qname, dns.TypeTXT), Txt: []string{DNSSchemaVersion}}}}
	case labels[n-1] == "svc":
		return z.svcName(qname, labels[:n-1], qtype)
	case labels[n-1] == "pod":
		return z.podName(qname, labels[:n-1], qtype)
	}
	return nxdomain
}

// podName answers <a-b-c-d>.<ns>.pod.<zone> for any well-formed address
// ("pods insecure": the pod is not looked up).
func (z *zone) podName(qname string, labels []string, qtype uint16) result {
	switch len(labels) {
	case 0, 1:
		return nodata
	case 2:
		a, ok := undashed(labels[0])
		if !ok {
			return nxdomain
		}
		if rr := z.addr(qname, a, qtype); rr != nil {
			return result{answer: []dns.RR{rr}}
		}
		return nodata
	}
	return nxdomain
}

// svcName answers names under svc.<zone>; labels lead to "svc".
func (z *zone) svcName(qname string, labels []string, qtype uint16) result {
	n := len(labels)
	if n == 0 {
		return nodata
	}
	ns := labels[n-1]
	if n == 1 {
		if objs, _ := z.svcs.ByIndex(cache.NamespaceIndex, ns); len(objs) > 0 {
			return nodata
		}
		return nxdomain
	}
	svc := z.service(ns, labels[n-2])
	if svc == nil {
		return nxdomain
	}
	switch n {
	case 2:
		return z.serviceRecords(qname, svc, qtype)
	case 3:
		if proto, ok := strings.CutPrefix(labels[0], "_"); ok {
			// The empty non-terminal _<proto>.<svc>: exists when a port has proto.
			for _, p := range svc.Spec.Ports {
				if strings.EqualFold(string(p.Protocol), proto) {
					return nodata
				}
			}
			return nxdomain
		}
		return z.endpointName(qname, svc, labels[0], qtype)
	case 4:
		port, ok1 := strings.CutPrefix(labels[0], "_")
		proto, ok2 := strings.CutPrefix(labels[1], "_")
		if !ok1 || !ok2 {
			return nxdomain
		}
		return z.srv(qname, svc, port, proto, qtype)
	}
	return nxdomain
}

func (z *zone) service(ns, name string) *corev1.Service {
	obj, ok, err := z.svcs.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	svc, _ := obj.(*corev1.Service)
	return svc
}

func (z *zone) fqdn(svc *corev1.Service) string {
	return svc.Name + "." + svc.Namespace + ".svc." + z.origin
}

// serviceSlices are the EndpointSlices of svc.
func (z *zone) serviceSlices(svc *corev1.Service) []*discoveryv1.EndpointSlice {
	objs, _ := z.slices.ByIndex(byService, svc.Namespace+"/"+svc.Name)
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, es)
		}
	}
	return out
}

// endpoints are the published addresses of svc, each once.
func (z *zone) endpoints(svc *corev1.Service) []endpoint {
	var out []endpoint
	seen := map[netip.Addr]bool{}
	for _, es := range z.serviceSlices(svc) {
		sliceEndpoints(svc, es, func(ep endpoint) {
			if !seen[ep.addr] {
				seen[ep.addr] = true
				out = append(out, ep)
			}
		})
	}
	return out
}

// serviceRecords answers <svc>.<ns>.svc.<zone>.
func (z *zone) serviceRecords(qname string, svc *corev1.Service, qtype uint16) result {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		target := dns.CanonicalName(svc.Spec.ExternalName)
		if _, ok := dns.IsDomainName(target); !ok || svc.Spec.ExternalName == "" {
			return nodata
		}
		cname := &dns.CNAME{Hdr: z.hdr(qname, dns.TypeCNAME), Target: target}
		return result{answer: []dns.RR{cname}, cname: target}
	}
	if qtype == dns.TypeSRV {
		return z.srv(qname, svc, "", "", qtype)
	}
	var r result
	if isHeadless(svc) {
		for _, ep := range z.endpoints(svc) {
			if rr := z.addr(qname, ep.addr, qtype); rr != nil {
				r.answer = append(r.answer, rr)
			}
		}
		rand.Shuffle(len(r.answer), func(i, j int) { r.answer[i], r.answer[j] = r.answer[j], r.answer[i] })
		return r
	}
	for _, a := range clusterIPs(svc) {
		if rr := z.addr(qname, a, qtype); rr != nil {
			r.answer = append(r.answer, rr)
		}
	}
	return r
}

// endpointName answers <hostname or a-b-c-d>.<svc>.<ns>.svc.<zone>.
func (z *zone) endpointName(qname string, svc *corev1.Service, label string, qtype uint16) result {
	found := false
	var r result
	for _, ep := range z.endpoints(svc) {
		if ep.label != label {
			continue
		}
		found = true
		if rr := z.addr(qname, ep.addr, qtype); rr != nil {
			r.answer = append(r.answer, rr)
		}
	}
	if !found {
		return nxdomain
	}
	return r
}
