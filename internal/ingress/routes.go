package ingress

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// ClassName is the IngressClass the built-in controller serves, and
// Controller its spec.controller.
const (
	ClassName  = "orch"
	Controller = "orch.dev/ingress"
)

// Input is everything the routing table depends on.
type Input struct {
	Ingresses []*networkingv1.Ingress
	Classes   []*networkingv1.IngressClass
	Services  []*v1.Service
	Slices    []*discovery.EndpointSlice
}

// Table answers which backend serves a request. It is built whole from an
// Input and never changed after: the proxy swaps in a new one.
type Table struct {
	hosts    map[string][]*route // exact host → its routes, best first
	wildcard map[string][]*route // "*.example.com" → routes for one more label
	any      []*route            // rules without a host
	fallback *Backend            // the oldest Ingress's defaultBackend
	// TLS maps a host (or "*.domain") to the Secret (namespace/name) whose
	// certificate it is served with.
	TLS map[string]string
}

type route struct {
	exact   bool
	path    string
	backend *Backend
}

// Backend is a Service port and its endpoints at the time of the table.
type Backend struct {
	Ingress   string   // namespace/name of the Ingress that routes here
	Service   string   // namespace/name:port
	Endpoints []string // "ip:port", ready ones (serving terminating ones when none is ready)
}

// Match finds the backend of a request to host (without port) and path:
// the rules of the exact host, then of a wildcard host, then of rules
// without a host (a host whose paths do not match falls through to
// those, as in Gateway API; ingress-nginx would answer from the host's
// default); within them an Exact path first, then the longest Prefix
// (matched by path elements, as upstream). The default backend answers
// what nothing matches; nil when there is none.
func (t *Table) Match(host, path string) *Backend {
	host = strings.ToLower(host)
	if b := matchPath(t.hosts[host], path); b != nil {
		return b
	}
	if i := strings.IndexByte(host, '.'); i > 0 {
		if b := matchPath(t.wildcard["*"+host[i:]], path); b != nil {
			return b
		}
	}
	if b := matchPath(t.any, path); b != nil {
		return b
	}
	return t.fallback
}

func matchPath(routes []*route, path string) *Backend {
	for _, r := range routes { // sorted: exact first, then longer prefixes
		if r.exact {
			if path == r.path {
				return r.backend
			}
			continue
		}
		if prefixMatch(r.path, path) {
			return r.backend
		}
	}
	return nil
}

// prefixMatch is upstream's Prefix match: p's path elements are a prefix
// of path's ("/foo" matches "/foo" and "/foo/bar", not "/foobar"); a
// trailing slash in p is ignored.
func prefixMatch(p, path string) bool {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return true
	}
	return path == p || strings.HasPrefix(path, p+"/") || path == p+"/"
}

// Serves reports whether an Ingress is the built-in controller's: its
// class is ClassName (by name or the deprecated annotation), or it names
// none and the class of the built-in controller is the default.
func Serves(ing *networkingv1.Ingress, classes []*networkingv1.IngressClass) bool {
	if ing.Spec.IngressClassName != nil {
		return ours(*ing.Spec.IngressClassName, classes)
	}
	if c, ok := ing.Annotations["kubernetes.io/ingress.class"]; ok {
		return ours(c, classes)
	}
	for _, c := range classes {
		if c.Annotations["ingressclass.kubernetes.io/is-default-class"] == "true" {
			return c.Spec.Controller == Controller
		}
	}
	return false
}

func ours(name string, classes []*networkingv1.IngressClass) bool {
	for _, c := range classes {
		if c.Name == name {
			return c.Spec.Controller == Controller
		}
	}
	return false
}

// Build computes the routing table. Ingresses are taken oldest first: when
// two route the same host and path, the older one wins, as when two set a
// default backend.
func Build(in Input) *Table {
	t := &Table{hosts: map[string][]*route{}, wildcard: map[string][]*route{}, TLS: map[string]string{}}
	ings := append([]*networkingv1.Ingress(nil), in.Ingresses...)
	sort.Slice(ings, func(i, j int) bool {
		a, b := ings[i], ings[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	svcs := map[string]*v1.Service{}
	for _, s := range in.Services {
		svcs[s.Namespace+"/"+s.Name] = s
	}
	slices := map[string][]*discovery.EndpointSlice{}
	for _, s := range in.Slices {
		if name := s.Labels[discovery.LabelServiceName]; name != "" && s.AddressType == discovery.AddressTypeIPv4 {
			slices[s.Namespace+"/"+name] = append(slices[s.Namespace+"/"+name], s)
		}
	}
	seen := map[string]bool{} // host + path type + path already routed
	for _, ing := range ings {
		if ing.DeletionTimestamp != nil || !Serves(ing, in.Classes) {
			continue
		}
		key := ing.Namespace + "/" + ing.Name
		backend := func(b *networkingv1.IngressBackend) *Backend {
			if b == nil || b.Service == nil {
				return nil // resource backends are not served
			}
			return resolve(key, ing.Namespace, b.Service, svcs, slices)
		}
		if t.fallback == nil {
			t.fallback = backend(ing.Spec.DefaultBackend)
		}
		for _, tls := range ing.Spec.TLS {
			for _, h := range tls.Hosts {
				h = strings.ToLower(h)
				if _, taken := t.TLS[h]; !taken && tls.SecretName != "" {
					t.TLS[h] = ing.Namespace + "/" + tls.SecretName
				}
			}
		}
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil {
				continue
			}
			host := strings.ToLower(rule.Host)
			for _, p := range rule.HTTP.Paths {
				exact := p.PathType != nil && *p.PathType == networkingv1.PathTypeExact
				path := p.Path
				if path == "" {
					path = "/"
				}
				id := fmt.Sprintf("%s\x00%v\x00%s", host, exact, path)
				if seen[id] {
					continue
				}
				b := backend(&p.Backend)
				if b == nil {
					continue // a resource backend: not served, and it hides nothing
				}
				seen[id] = true
				r := &route{exact: exact, path: path, backend: b}
				switch {
				case host == "":
					t.any = append(t.any, r)
				case strings.HasPrefix(host, "*."):
					t.wildcard[host] = append(t.wildcard[host], r)
				default:
					t.hosts[host] = append(t.hosts[host], r)
				}
			}
		}
	}
	for _, rs := range t.hosts {
		sortRoutes(rs)
	}
	for _, rs := range t.wildcard {
		sortRoutes(rs)
	}
	sortRoutes(t.any)
	return t
}

// sortRoutes puts Exact paths first, then Prefix paths longest first.
func sortRoutes(rs []*route) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].exact != rs[j].exact {
			return rs[i].exact
		}
		return len(strings.TrimSuffix(rs[i].path, "/")) > len(strings.TrimSuffix(rs[j].path, "/"))
	})
}

// resolve finds the endpoints of a Service port named by an Ingress.
func resolve(ingress, ns string, b *networkingv1.IngressServiceBackend, svcs map[string]*v1.Service, slices map[string][]*discovery.EndpointSlice) *Backend {
	key := ns + "/" + b.Name
	out := &Backend{Ingress: ingress, Service: key + ":" + portLabel(b.Port)}
	svc := svcs[key]
	if svc == nil {
		return out // no endpoints: 503
	}
	var sp *v1.ServicePort
	for i, p := range svc.Spec.Ports {
		if (b.Port.Name != "" && p.Name == b.Port.Name) || (b.Port.Name == "" && p.Port == b.Port.Number) {
			sp = &svc.Spec.Ports[i]
			break
		}
	}
	if sp == nil || (sp.Protocol != "" && sp.Protocol != v1.ProtocolTCP) {
		return out
	}
	var ready, serving []string
	for _, s := range slices[key] {
		var port int32
		for _, p := range s.Ports {
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
		for _, e := range s.Endpoints {
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

func portLabel(p networkingv1.ServiceBackendPort) string {
	if p.Name != "" {
		return p.Name
	}
	return fmt.Sprint(p.Number)
}
