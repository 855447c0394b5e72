package dns

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// Informer indexes the zone looks objects up by.
const (
	byClusterIP = "dns-cluster-ip" // Service by each of its ClusterIPs
	byService   = "dns-service"    // EndpointSlice by "<ns>/<service name>"
	byAddress   = "dns-address"    // EndpointSlice by each endpoint address
)

func addIndexers(svcs, slices cache.SharedIndexInformer) error {
	if err := svcs.AddIndexers(cache.Indexers{byClusterIP: clusterIPIndex}); err != nil {
		return fmt.Errorf("index services: %w", err)
	}
	if err := slices.AddIndexers(cache.Indexers{byService: serviceIndex, byAddress: addressIndex}); err != nil {
		return fmt.Errorf("index endpointslices: %w", err)
	}
	for _, inf := range []cache.SharedIndexInformer{svcs, slices} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return fmt.Errorf("set transform: %w", err)
		}
	}
	return nil
}

// stripManagedFields drops what DNS never reads to keep the caches small.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		m.SetAnnotations(nil)
	}
	return obj, nil
}

// canonicalIP is the form addresses are indexed by, or "" if s is not an IP.
func canonicalIP(s string) string {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return ""
	}
	return a.Unmap().String()
}

// clusterIPs are the service's virtual IPs; none for headless and
// ExternalName services.
func clusterIPs(svc *corev1.Service) []netip.Addr {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

func isHeadless(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP == corev1.ClusterIPNone
}

func clusterIPIndex(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, a := range clusterIPs(svc) {
		keys = append(keys, a.String())
	}
	return keys, nil
}

func serviceIndex(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	name := es.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil, nil
	}
	return []string{es.Namespace + "/" + name}, nil
}

func addressIndex(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || es.AddressType == discoveryv1.AddressTypeFQDN {
		return nil, nil
	}
	var keys []string
	for _, ep := range es.Endpoints {
		for _, a := range ep.Addresses {
			if k := canonicalIP(a); k != "" {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}

// endpoint is one address behind a service, with its DNS label.
type endpoint struct {
	addr  netip.Addr
	label string // spec hostname, or the dashed address
}

// dashed is the label of an address: 10-42-0-7, fd00--7.
func dashed(a netip.Addr) string {
	if a.Is4() {
		return strings.ReplaceAll(a.String(), ".", "-")
	}
	return strings.ReplaceAll(a.String(), ":", "-")
}

// undashed parses a dashed address label.
func undashed(label string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ".")); err == nil && a.Is4() {
		return a, true
	}
	if a, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ":")); err == nil && a.Is6() && a.Zone() == "" {
		return a, true
	}
	return netip.Addr{}, false
}

// endpointReady reports whether DNS publishes ep: ready (nil means ready),
// or any endpoint when the service publishes not-ready addresses.
func endpointReady(svc *corev1.Service, ep *discoveryv1.Endpoint) bool {
	if svc.Spec.PublishNotReadyAddresses {
		return true
	}
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}

// sliceEndpoints calls fn for each published address of one slice of svc.
func sliceEndpoints(svc *corev1.Service, es *discoveryv1.EndpointSlice, fn func(ep endpoint)) {
	if es.AddressType == discoveryv1.AddressTypeFQDN {
		return
	}
	for i := range es.Endpoints {
		ep := &es.Endpoints[i]
		if !endpointReady(svc, ep) {
			continue
		}
		for _, s := range ep.Addresses {
			a, err := netip.ParseAddr(s)
			if err != nil {
				continue
			}
			a = a.Unmap()
			label := dashed(a)
			if ep.Hostname != nil && *ep.Hostname != "" {
				label = strings.ToLower(*ep.Hostname)
			}
			fn(endpoint{addr: a, label: label})
		}
	}
}
