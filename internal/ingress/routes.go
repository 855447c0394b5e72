package ingress

import (
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"orch/internal/routing"
)

// ClassName is the IngressClass the built-in controller serves, and
// Controller its spec.controller.
const (
	ClassName  = "orch"
	Controller = "orch.dev/ingress"
)

// Input is everything the Ingresses' routes depend on.
type Input struct {
	Ingresses []*networkingv1.Ingress
	Classes   []*networkingv1.IngressClass
	Services  []*v1.Service
	Slices    []*discovery.EndpointSlice
}

// Routes are the Ingresses' rules, served on the Ingress ports.
type Routes struct {
	Rules    []*routing.Rule
	Fallback *routing.Rule // the oldest Ingress's defaultBackend
	// TLS maps a host (or "*.domain") to the Secret (namespace/name) whose
	// certificate it is served with.
	TLS map[string]string
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

// Build turns the served Ingresses into rules. A wildcard host matches
// one label; ImplementationSpecific paths are Prefix. Ingresses are taken
// oldest first: when two route the same host and path, the older one
// wins (its rules have the lower Order), as when two set a default
// backend.
func Build(in Input) *Routes {
	out := &Routes{TLS: map[string]string{}}
	ings := append([]*networkingv1.Ingress(nil), in.Ingresses...)
	sort.Slice(ings, func(i, j int) bool {
		a, b := ings[i], ings[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	svcs := routing.NewServices(in.Services, in.Slices)
	for order, ing := range ings {
		if ing.DeletionTimestamp != nil || !Serves(ing, in.Classes) {
			continue
		}
		src := routing.Source{Kind: "Ingress", Name: ing.Namespace + "/" + ing.Name}
		backend := func(b *networkingv1.IngressBackend) []routing.Weighted {
			if b == nil || b.Service == nil {
				return nil // resource backends are not served
			}
			be := svcs.Backend(ing.Namespace, b.Service.Name, b.Service.Port.Name, b.Service.Port.Number)
			return []routing.Weighted{{Backend: be, Weight: 1}}
		}
		if out.Fallback == nil {
			if bs := backend(ing.Spec.DefaultBackend); bs != nil {
				out.Fallback = &routing.Rule{Path: "/", Backends: bs, Source: src, Order: order}
			}
		}
		for _, tls := range ing.Spec.TLS {
			for _, h := range tls.Hosts {
				h = strings.ToLower(h)
				if _, taken := out.TLS[h]; !taken && tls.SecretName != "" {
					out.TLS[h] = ing.Namespace + "/" + tls.SecretName
				}
			}
		}
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				bs := backend(&p.Backend)
				if bs == nil {
					continue // a resource backend: not served, and it hides nothing
				}
				path := p.Path
				if path == "" {
					path = "/"
				}
				out.Rules = append(out.Rules, &routing.Rule{
					Host: strings.ToLower(rule.Host), OneLabel: true,
					Path: path, Exact: p.PathType != nil && *p.PathType == networkingv1.PathTypeExact,
					Backends: bs, Source: src, Order: order,
				})
			}
		}
	}
	return out
}
