package routing

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// Services finds the endpoints of Service ports, from Services and their
// IPv4 EndpointSlices.
type Services struct {
	svcs   map[string]*v1.Service
	slices map[string][]*discovery.EndpointSlice
}

// NewServices indexes svcs and slices.
func NewServices(svcs []*v1.Service, slices []*discovery.EndpointSlice) *Services {
	s := &Services{svcs: map[string]*v1.Service{}, slices: map[string][]*discovery.EndpointSlice{}}
	for _, svc := range svcs {
		s.svcs[svc.Namespace+"/"+svc.Name] = svc
	}
	for _, sl := range slices {
		if name := sl.Labels[discovery.LabelServiceName]; name != "" && sl.AddressType == discovery.AddressTypeIPv4 {
			s.slices[sl.Namespace+"/"+name] = append(s.slices[sl.Namespace+"/"+name], sl)
		}
	}
	return s
}

// Has reports whether the Service namespace/name exists.
func (s *Services) Has(ns, name string) bool { return s.svcs[ns+"/"+name] != nil }

// Backend is the Service port of Service ns/name given by portName (when
// not "") or number: its ready endpoints, or its serving terminating ones
// when none is ready. A missing Service or port has no endpoints (503).
func (s *Services) Backend(ns, name, portName string, number int32) *Backend {
	key := ns + "/" + name
	label := portName
	if label == "" {
		label = fmt.Sprint(number)
	}
	out := &Backend{Service: key + ":" + label}
	svc := s.svcs[key]
	if svc == nil {
		return out
	}
	var sp *v1.ServicePort
	for i, p := range svc.Spec.Ports {
		if (portName != "" && p.Name == portName) || (portName == "" && p.Port == number) {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil || (sp.Protocol != "" && sp.Protocol != v1.ProtocolTCP) {
		return out
	}
	var ready, serving []string
	for _, sl := range s.slices[key] {
		var port int32
		for _, p := range sl.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if name == sp.Name && p.Port != nil && (p.Protocol == nil || *p.Protocol == v1.ProtocolTCP) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			addr := fmt.Sprintf("%s:%d", e.Addresses[0], port)
			switch c := e.Conditions; {
			case c.Ready == nil || *c.Ready:
				ready = append(ready, addr)
			case c.Serving != nil && *c.Serving:
				serving = append(serving, addr)
			}
		}
	}
	if len(ready) == 0 {
		ready = serving
	}
	sort.Strings(ready)
	out.Endpoints = ready
	return out
}
