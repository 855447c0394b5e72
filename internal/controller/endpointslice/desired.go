package endpointslice

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"orch/internal/cidr"
	"orch/internal/controller"
)

// maxEndpointsPerSlice is upstream's default --max-endpoints-per-slice.
const maxEndpointsPerSlice = 100

// portSet is the resolved ports of one pod for a service, with a key that
// groups pods whose named ports resolve alike.
type portSet struct {
	key   string
	ports []discoveryv1.EndpointPort
}

// desiredSlices computes the slices a service should have: for each
// address type it has (addressTypes), the endpoints and ports of its pods
// that have an address of that family, grouped by port set and cut at
// maxEndpointsPerSlice. zones maps node names to their zone label.
func desiredSlices(svc *corev1.Service, pods []*corev1.Pod, zones map[string]string) []discoveryv1.EndpointSlice {
	var out []discoveryv1.EndpointSlice
	for _, addressType := range addressTypes(svc) {
		out = append(out, slicesOf(svc, pods, zones, addressType)...)
	}
	return out
}

// slicesOf is desiredSlices for one address type.
func slicesOf(svc *corev1.Service, pods []*corev1.Pod, zones map[string]string, addressType discoveryv1.AddressType) []discoveryv1.EndpointSlice {
	groups := map[string]*discoveryv1.EndpointSlice{}
	var order []string
	for _, pod := range pods {
		ip := cidr.PodIPOf(pod, corev1.IPFamily(addressType))
		if ip == "" || !includePod(pod) {
			continue // a pod without an address of this family is in no slice of it
		}
		ps := resolvePorts(svc, pod)
		slice, ok := groups[ps.key]
		if !ok {
			slice = &discoveryv1.EndpointSlice{AddressType: addressType, Ports: ps.ports}
			groups[ps.key] = slice
			order = append(order, ps.key)
		}
		slice.Endpoints = append(slice.Endpoints, endpointFor(svc, pod, ip, zones))
	}
	sort.Strings(order)
	var out []discoveryv1.EndpointSlice
	for _, key := range order {
		g := groups[key]
		sort.Slice(g.Endpoints, func(i, j int) bool { return g.Endpoints[i].Addresses[0] < g.Endpoints[j].Addresses[0] })
		for start := 0; start < len(g.Endpoints); start += maxEndpointsPerSlice {
			end := min(start+maxEndpointsPerSlice, len(g.Endpoints))
			out = append(out, discoveryv1.EndpointSlice{AddressType: g.AddressType, Ports: g.Ports, Endpoints: g.Endpoints[start:end]})
		}
	}
	if len(out) == 0 {
		// A service with no endpoints still has one empty slice per
		// address type, as upstream.
		out = append(out, discoveryv1.EndpointSlice{AddressType: addressType, Ports: resolvePorts(svc, nil).ports, Endpoints: []discoveryv1.Endpoint{}})
	}
	return out
}

// addressTypes are the address types of a service's slices, as upstream:
// one per entry of spec.ipFamilies, in its order. A service written
// without families (by an older apiserver) gets its cluster IP's family,
// or both when it is headless, so that its endpoints stay until the
// apiserver fills them in.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var types []discoveryv1.AddressType
	for _, family := range svc.Spec.IPFamilies {
		switch family {
		case corev1.IPv4Protocol:
			types = append(types, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			types = append(types, discoveryv1.AddressTypeIPv6)
		}
	}
	switch {
	case len(types) > 0:
		return types
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
		return []discoveryv1.AddressType{discoveryv1.AddressType(cidr.FamilyOf(svc.Spec.ClusterIP))}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

// includePod is true for pods that have not finished.
func includePod(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func endpointFor(svc *corev1.Service, pod *corev1.Pod, ip string, zones map[string]string) discoveryv1.Endpoint {
	ready := controller.PodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ep := discoveryv1.Endpoint{
		Addresses: []string{ip},
		Conditions: discoveryv1.EndpointConditions{
			Ready:       ptr.To((ready && !terminating) || svc.Spec.PublishNotReadyAddresses),
			Serving:     ptr.To(ready || svc.Spec.PublishNotReadyAddresses),
			Terminating: ptr.To(terminating),
		},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = ptr.To(pod.Spec.NodeName)
		if zone, ok := zones[pod.Spec.NodeName]; ok {
			ep.Zone = ptr.To(zone)
		}
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
		ep.Hostname = ptr.To(pod.Spec.Hostname)
	}
	return ep
}

// resolvePorts turns the service's ports into endpoint ports for pod,
// resolving named target ports against the pod's containers (pod nil: the
// numeric ones only, for an empty slice).
func resolvePorts(svc *corev1.Service, pod *corev1.Pod) portSet {
	var ps portSet
	var key strings.Builder
	for _, sp := range svc.Spec.Ports {
		port, ok := controller.TargetPort(sp, pod)
		if !ok {
			continue // a named port this pod does not have
		}
		ps.ports = append(ps.ports, discoveryv1.EndpointPort{
			Name: ptr.To(sp.Name), Port: ptr.To(port), Protocol: ptr.To(sp.Protocol), AppProtocol: sp.AppProtocol,
		})
		fmt.Fprintf(&key, "%s/%s/%d;", sp.Name, sp.Protocol, port)
	}
	ps.key = key.String()
	if ps.ports == nil {
		ps.ports = []discoveryv1.EndpointPort{}
	}
	return ps
}
