package proxy

import (
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"orch/internal/cidr"
)

// Labels that take a Service (or its EndpointSlices) away from this proxy,
// as for kube-proxy.
const (
	labelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	labelHeadless         = "service.kubernetes.io/headless"
)

// defaultAffinitySeconds is the API's default
// sessionAffinityConfig.clientIP.timeoutSeconds (3 hours).
const defaultAffinitySeconds = 10800

// servicePort is one port of one Service in one IP family, reduced to
// what the rules need: its addresses are the family's.
type servicePort struct {
	name        string // "ns/name:port", or "ns/name" when the port has no name
	protocol    string // tcp, udp or sctp
	clusterIP   string
	port        int
	nodePort    int
	healthCheck int // healthCheckNodePort, LoadBalancer with external policy Local
	externalIPs []string
	lbIPs       []string
	lbSources   []string // loadBalancerSourceRanges of the family (a 0/0 range means none)

	externallyAccessible bool
	externalLocal        bool
	internalLocal        bool
	affinitySeconds      int // > 0: sessionAffinity ClientIP

	svc, svl, ext, fw string // chain names
}

// endpoint is one address:port behind a service port.
type endpoint struct {
	ip          string
	port        int
	local       bool
	ready       bool
	serving     bool
	terminating bool
	chain       string // KUBE-SEP-…
}

// String is "ip:port", "[ip]:port" for IPv6, as upstream (chain names
// hash it).
func (e endpoint) String() string { return net.JoinHostPort(e.ip, strconv.Itoa(e.port)) }

// usesCluster reports whether the port needs its Cluster-policy endpoints:
// for internal traffic with policy Cluster, and for any external traffic
// (short-circuit of local traffic to external destinations).
func (sp *servicePort) usesCluster() bool { return !sp.internalLocal || sp.externallyAccessible }

// usesLocal reports whether the port needs its node-local endpoints.
func (sp *servicePort) usesLocal() bool {
	return sp.internalLocal || (sp.externalLocal && sp.externallyAccessible)
}

// ipOf returns s in canonical form when it is an address of the family
// (IPv6 when ipv6 is set), "" otherwise.
func ipOf(s string, ipv6 bool) string {
	if ipv6 {
		return cidr.AddrOf(s, v1.IPv6Protocol)
	}
	return cidr.AddrOf(s, v1.IPv4Protocol)
}

// skipService reports whether the proxy leaves a Service alone: headless,
// ExternalName, or handed to another proxy by label.
func skipService(s *v1.Service) bool {
	if _, ok := s.Labels[labelServiceProxyName]; ok {
		return true
	}
	if s.Spec.Type == v1.ServiceTypeExternalName {
		return true
	}
	return s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone
}

// clusterIPOf returns the Service's cluster IP of the family, or "" when
// it has none.
func clusterIPOf(s *v1.Service, ipv6 bool) string {
	for _, c := range append([]string{s.Spec.ClusterIP}, s.Spec.ClusterIPs...) {
		if ip := ipOf(c, ipv6); ip != "" {
			return ip
		}
	}
	return ""
}

// servicePorts turns a Service into its service ports of the family (none
// when the proxy must skip it, or when the Service has no cluster IP of
// the family: a single-stack Service of the other one).
func servicePorts(s *v1.Service, ipv6 bool) []*servicePort {
	if skipService(s) {
		return nil
	}
	cip := clusterIPOf(s, ipv6)
	if cip == "" {
		return nil
	}
	// The external policy applies to Services that are reachable from
	// outside at all; each port is then external when it has a NodePort, a
	// load-balancer IP or an external IP.
	accessible := s.Spec.Type == v1.ServiceTypeLoadBalancer || s.Spec.Type == v1.ServiceTypeNodePort ||
		(s.Spec.Type == v1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
	extLocal := accessible && s.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal
	intLocal := s.Spec.InternalTrafficPolicy != nil && *s.Spec.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal
	affinity := 0
	if s.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		affinity = defaultAffinitySeconds
		if c := s.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			affinity = int(*c.ClientIP.TimeoutSeconds)
		}
	}
	var extIPs, lbIPs, sources []string
	for _, e := range s.Spec.ExternalIPs {
		if ip := ipOf(e, ipv6); ip != "" {
			extIPs = append(extIPs, ip)
		}
	}
	if s.Spec.LoadBalancerClass == nil {
		for _, ing := range s.Status.LoadBalancer.Ingress {
			if ing.IPMode != nil && *ing.IPMode != v1.LoadBalancerIPModeVIP {
				continue // a proxying load balancer: traffic arrives at the NodePort
			}
			if ip := ipOf(ing.IP, ipv6); ip != "" {
				lbIPs = append(lbIPs, ip)
			}
		}
	}
	for _, r := range s.Spec.LoadBalancerSourceRanges {
		_, n, err := net.ParseCIDR(strings.TrimSpace(r))
		if err != nil || (len(n.Mask) == net.IPv6len) != ipv6 {
			continue // the other family's ranges are for its rules
		}
		if ones, _ := n.Mask.Size(); ones == 0 {
			sources = nil // 0.0.0.0/0 (::/0) allows everyone: no firewall
			break
		}
		sources = append(sources, n.String())
	}
	hc := 0
	if s.Spec.Type == v1.ServiceTypeLoadBalancer && extLocal {
		hc = int(s.Spec.HealthCheckNodePort)
	}
	var out []*servicePort
	for _, p := range s.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		name := s.Namespace + "/" + s.Name
		if p.Name != "" {
			name += ":" + p.Name
		}
		out = append(out, &servicePort{
			name:                 name,
			protocol:             proto,
			clusterIP:            cip,
			port:                 int(p.Port),
			nodePort:             int(p.NodePort),
			healthCheck:          hc,
			externalIPs:          extIPs,
			lbIPs:                lbIPs,
			lbSources:            sources,
			externallyAccessible: p.NodePort != 0 || len(lbIPs) > 0 || len(extIPs) > 0,
			externalLocal:        extLocal,
			internalLocal:        intLocal,
			affinitySeconds:      affinity,
			svc:                  portChainName(prefixSVC, name, proto),
			svl:                  portChainName(prefixSVL, name, proto),
			ext:                  portChainName(prefixEXT, name, proto),
			fw:                   portChainName(prefixFW, name, proto),
		})
	}
	return out
}

// endpointsByPort groups the endpoints of the family's EndpointSlices (the
// slice controller writes one set of slices per family) by service port
// ("ns/name:port" + protocol), deduplicated by address:port (a
// non-terminating endpoint wins) and sorted by address:port as upstream.
func endpointsByPort(slices []*discovery.EndpointSlice, nodeName string, ipv6 bool) map[string][]endpoint {
	sets := map[string]map[string]endpoint{}
	for _, sl := range slices {
		svcName := sl.Labels[discovery.LabelServiceName]
		if svcName == "" || sl.AddressType != addressType(ipv6) {
			continue
		}
		if _, ok := sl.Labels[labelServiceProxyName]; ok {
			continue
		}
		for _, p := range sl.Ports {
			if p.Port == nil {
				continue
			}
			name := sl.Namespace + "/" + svcName
			if p.Name != nil && *p.Name != "" {
				name += ":" + *p.Name
			}
			proto := "tcp"
			if p.Protocol != nil {
				proto = strings.ToLower(string(*p.Protocol))
			}
			key := name + "\x00" + proto
			set := sets[key]
			if set == nil {
				set = map[string]endpoint{}
				sets[key] = set
			}
			for _, e := range sl.Endpoints {
				if len(e.Addresses) == 0 {
					continue
				}
				ip := ipOf(e.Addresses[0], ipv6)
				if ip == "" {
					continue
				}
				c := e.Conditions
				ready := c.Ready == nil || *c.Ready
				ep := endpoint{
					ip: ip, port: int(*p.Port),
					local:       nodeName != "" && e.NodeName != nil && *e.NodeName == nodeName,
					ready:       ready,
					serving:     c.Serving == nil || *c.Serving,
					terminating: c.Terminating != nil && *c.Terminating,
				}
				ep.chain = endpointChainName(name, proto, ep.String())
				if _, seen := set[ep.String()]; !seen || !ep.terminating {
					set[ep.String()] = ep
				}
			}
		}
	}
	out := make(map[string][]endpoint, len(sets))
	for key, set := range sets {
		list := make([]endpoint, 0, len(set))
		for _, e := range set {
			list = append(list, e)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].String() < list[j].String() })
		out[key] = list
	}
	return out
}

// categorize picks the endpoints of a service port as upstream does:
// cluster = ready ones (or, when none is ready anywhere, the serving and
// terminating ones); local = this node's ready ones (or its serving and
// terminating ones when it has no ready one); reachable = the union, the
// endpoints that get a KUBE-SEP chain; any reports whether the service has
// a usable endpoint anywhere.
func categorize(sp *servicePort, eps []endpoint) (cluster, local, reachable []endpoint, any bool) {
	filter := func(f func(endpoint) bool) []endpoint {
		var out []endpoint
		for _, e := range eps {
			if f(e) {
				out = append(out, e)
			}
		}
		return out
	}
	if sp.usesCluster() {
		cluster = filter(func(e endpoint) bool { return e.ready })
		if len(cluster) == 0 {
			cluster = filter(func(e endpoint) bool { return e.serving && e.terminating })
		}
		any = len(cluster) > 0
	}
	if !sp.usesLocal() {
		return cluster, nil, cluster, any
	}
	for _, e := range eps {
		if e.ready || (e.serving && e.terminating) {
			any = true
		}
	}
	local = filter(func(e endpoint) bool { return e.local && e.ready })
	fallback := false
	if len(local) == 0 {
		local = filter(func(e endpoint) bool { return e.local && e.serving && e.terminating })
		fallback = len(local) > 0
	}
	if !sp.usesCluster() {
		return nil, local, local, any
	}
	if !fallback {
		return cluster, local, cluster, any // every ready local endpoint is in cluster
	}
	seen := map[string]bool{}
	for _, e := range append(append([]endpoint(nil), cluster...), local...) {
		if !seen[e.String()] {
			seen[e.String()] = true
			reachable = append(reachable, e)
		}
	}
	sort.Slice(reachable, func(i, j int) bool { return reachable[i].String() < reachable[j].String() })
	return cluster, local, reachable, any
}

// sortedServicePorts are the ports of services in the family, by name and
// protocol.
func sortedServicePorts(services []*v1.Service, ipv6 bool) []*servicePort {
	var ports []*servicePort
	for _, s := range services {
		ports = append(ports, servicePorts(s, ipv6)...)
	}
	sort.Slice(ports, func(i, j int) bool {
		if ports[i].name != ports[j].name {
			return ports[i].name < ports[j].name
		}
		return ports[i].protocol < ports[j].protocol
	})
	return ports
}
