package dns

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// portMatches reports whether a port named name with protocol proto
// answers _<port>._<proto>; empty port and proto match every port.
func portMatches(name, protocol, port, proto string) bool {
	if protocol == "" {
		protocol = string(corev1.ProtocolTCP)
	}
	if port != "" && (name == "" || !strings.EqualFold(name, port)) {
		return false
	}
	return proto == "" || strings.EqualFold(protocol, proto)
}

// srv answers _<port>._<proto>.<svc>.<ns>.svc.<zone> (port and proto set)
// and SRV of <svc>.<ns>.svc.<zone> (both empty: every port). A ClusterIP
// service has one record per port, targeting the service's name; a
// headless one has one per port and endpoint, targeting the endpoint's
// name, with the endpoints' addresses in the additional section.
func (z *zone) srv(qname string, svc *corev1.Service, port, proto string, qtype uint16) result {
	exists := false
	for _, p := range svc.Spec.Ports {
		if portMatches(p.Name, string(p.Protocol), port, proto) {
			exists = true
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || (!exists && port != "") {
		return nxdomain
	}
	if qtype != dns.TypeSRV && qtype != dns.TypeANY {
		return nodata
	}
	var r result
	fqdn := z.fqdn(svc)
	if !isHeadless(svc) {
		for _, p := range svc.Spec.Ports {
			if portMatches(p.Name, string(p.Protocol), port, proto) {
				r.answer = append(r.answer, &dns.SRV{Hdr: z.hdr(qname, dns.TypeSRV), Port: uint16(p.Port), Target: fqdn})
			}
		}
		if len(r.answer) > 0 {
			for _, a := range clusterIPs(svc) {
				r.extra = append(r.extra, z.addr(fqdn, a, dns.TypeANY))
			}
		}
		setWeights(r.answer)
		return r
	}

	type srvKey struct {
		target string
		port   int32
	}
	type extraKey struct {
		name string
		addr netip.Addr
	}
	srvs, extras := map[srvKey]bool{}, map[extraKey]bool{}
	for _, es := range z.serviceSlices(svc) {
		for _, p := range es.Ports {
			if p.Port == nil {
				continue
			}
			var name, protocol string
			if p.Name != nil {
				name = *p.Name
			}
			if p.Protocol != nil {
				protocol = string(*p.Protocol)
			}
			if !portMatches(name, protocol, port, proto) {
				continue
			}
			sliceEndpoints(svc, es, func(ep endpoint) {
				target := ep.label + "." + fqdn
				if k := (srvKey{target, *p.Port}); !srvs[k] {
					srvs[k] = true
					r.answer = append(r.answer, &dns.SRV{Hdr: z.hdr(qname, dns.TypeSRV), Port: uint16(*p.Port), Target: target})
				}
				if k := (extraKey{target, ep.addr}); !extras[k] {
					extras[k] = true
					r.extra = append(r.extra, z.addr(target, ep.addr, dns.TypeANY))
				}
			})
		}
	}
	setWeights(r.answer)
	return r
}

// setWeights spreads a weight of 100 over the records, at least 1 each.
func setWeights(rrs []dns.RR) {
	if len(rrs) == 0 {
		return
	}
	w := uint16(max(100/len(rrs), 1))
	for _, rr := range rrs {
		rr.(*dns.SRV).Weight = w
	}
}

// ptr answers the reverse name of a: the names of the services with that
// ClusterIP and of the headless services' endpoints with that address.
// No records means the zone does not know a.
func (z *zone) ptr(qname string, a netip.Addr) []dns.RR {
	var targets []string
	objs, _ := z.svcs.ByIndex(byClusterIP, a.String())
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok {
			targets = append(targets, z.fqdn(svc))
		}
	}
	objs, _ = z.slices.ByIndex(byAddress, a.String())
	for _, o := range objs {
		es, ok := o.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		svc := z.service(es.Namespace, es.Labels[discoveryv1.LabelServiceName])
		if svc == nil || !isHeadless(svc) {
			continue
		}
		sliceEndpoints(svc, es, func(ep endpoint) {
			if ep.addr == a {
				targets = append(targets, ep.label+"."+z.fqdn(svc))
			}
		})
	}
	slices.Sort(targets)
	targets = slices.Compact(targets)
	rrs := make([]dns.RR, 0, len(targets))
	for _, t := range targets {
		rrs = append(rrs, &dns.PTR{Hdr: z.hdr(qname, dns.TypePTR), Ptr: t})
	}
	return rrs
}

// parseReverse parses a canonical in-addr.arpa or ip6.arpa name of one
// whole address.
func parseReverse(lname string) (netip.Addr, bool) {
	if rest, ok := strings.CutSuffix(lname, ".in-addr.arpa."); ok {
		labels := strings.Split(rest, ".")
		if len(labels) != 4 {
			return netip.Addr{}, false
		}
		slices.Reverse(labels)
		a, err := netip.ParseAddr(strings.Join(labels, "."))
		return a, err == nil && a.Is4()
	}
	if rest, ok := strings.CutSuffix(lname, ".ip6.arpa."); ok {
		labels := strings.Split(rest, ".")
		if len(labels) != 32 {
			return netip.Addr{}, false
		}
		var b [16]byte
		for i, l := range labels {
			if len(l) != 1 || !strings.Contains("0123456789abcdef", l) {
				return netip.Addr{}, false
			}
			nib := byte(strings.Index("0123456789abcdef", l))
			pos := 31 - i
			if pos%2 == 0 {
				b[pos/2] |= nib << 4
			} else {
				b[pos/2] |= nib
			}
		}
		return netip.AddrFrom16(b).Unmap(), true
	}
	return netip.Addr{}, false
}
