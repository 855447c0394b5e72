package endpointslice

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

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

// desiredSlices computes the endpoints and ports of every slice a service
// should have from its pods, grouped by port set and cut at
// maxEndpointsPerSlice. zones maps node names to their zone label.
func desiredSlices(svc *corev1.Service, pods []*corev1.Pod, zones map[string]string) []discoveryv1.EndpointSlice {
	groups := map[string]*discoveryv1.EndpointSlice{}
	var order []string
	for _, pod := range pods {
		if !includePod(pod) {
			continue
		}
		ps := resolvePorts(svc, pod)
		slice, ok := groups[ps.key]
		if !ok {
			slice = &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Ports: ps.ports}
			groups[ps.key] = slice
			order = append(order, ps.key)
		}
		slice.Endpoints = append(slice.Endpoints, endpointFor(svc, pod, zones))
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
		// A service with no endpoints still has one empty slice, as upstream.
		out = append(out, discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Ports: resolvePorts(svc, nil).ports, Endpoints: []discoveryv1.Endpoint{}})
	}
	return out
}

// includePod is true for pods that have an address and have not finished.
func includePod(pod *corev1.Pod) bool {
	if pod.Status.PodIP == "" || strings.Contains(pod.Status.PodIP, ":") {
		return false
	}
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func endpointFor(svc *corev1.Service, pod *corev1.Pod, zones map[string]string) discoveryv1.Endpoint {
	ready := controller.PodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ep := discoveryv1.Endpoint{
		Addresses: []string{pod.Status.PodIP},
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
