package gateway

import (
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"orch/internal/routing"
)

// attachment is a listener a route is attached to, and the hostnames it
// serves there.
type attachment struct {
	l     *listener
	hosts []string
}

// addRoute attaches an HTTPRoute to the listeners of orch's Gateways its
// parentRefs name, records each such parent's status and, when the route
// is accepted, adds its rules to the listeners' ports.
func (b *builder) addRoute(r *gwv1.HTTPRoute) {
	key := r.Namespace + "/" + r.Name
	rules, unsupported := b.convert(r)
	resolved, resolvedReason, resolvedMsg := b.checkBackends(r)
	var parents []gwv1.RouteParentStatus
	for _, ref := range r.Spec.ParentRefs {
		if (ref.Group != nil && *ref.Group != Group) || (ref.Kind != nil && *ref.Kind != "Gateway") {
			continue
		}
		ns := r.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		g := b.gateways[ns+"/"+string(ref.Name)]
		if g == nil {
			continue // not orch's: its controller writes its status
		}
		atts, reason, msg := b.attach(g, r, ref)
		accepted := len(atts) > 0
		if accepted && unsupported != "" {
			accepted, reason, msg = false, string(gwv1.RouteReasonUnsupportedValue), unsupported
		}
		if accepted {
			reason, msg = string(gwv1.RouteReasonAccepted), ""
			for _, a := range atts {
				a.l.status.AttachedRoutes++
				if !a.l.valid {
					continue // attached, but the listener is not served (its references do not resolve)
				}
				port := b.res.Ports[a.l.spec.Port]
				for _, h := range a.hosts {
					for _, rl := range rules {
						c := *rl
						c.Host = h
						port.Rules = append(port.Rules, &c)
					}
				}
			}
		}
		parents = append(parents, gwv1.RouteParentStatus{
			ParentRef:      ref,
			ControllerName: ControllerName,
			Conditions: []metav1.Condition{
				condition(string(gwv1.RouteConditionAccepted), accepted, reason, msg, r.Generation),
				condition(string(gwv1.RouteConditionResolvedRefs), resolved, resolvedReason, resolvedMsg, r.Generation),
			},
		})
	}
	if len(parents) > 0 {
		b.res.Routes[key] = parents
	}
}

// attach finds the listeners of g a route's parentRef attaches it to;
// with none, why not (a route condition reason and message).
func (b *builder) attach(g *gateway, r *gwv1.HTTPRoute, ref gwv1.ParentReference) ([]attachment, string, string) {
	if !g.accepted {
		return nil, string(gwv1.RouteReasonNotAllowedByListeners), "the Gateway is not accepted"
	}
	var atts []attachment
	named, allowed := false, false
	for _, l := range g.listeners {
		if (ref.SectionName != nil && *ref.SectionName != l.spec.Name) || (ref.Port != nil && *ref.Port != l.spec.Port) {
			continue
		}
		named = true
		if !l.attachable || len(l.status.SupportedKinds) == 0 || !b.namespaceAllowed(l.spec, g.gw.Namespace, r.Namespace) {
			continue
		}
		allowed = true
		if hosts := intersect(l.spec.Hostname, r.Spec.Hostnames); len(hosts) > 0 {
			atts = append(atts, attachment{l: l, hosts: hosts})
		}
	}
	switch {
	case len(atts) > 0:
		return atts, "", ""
	case !named:
		return nil, string(gwv1.RouteReasonNoMatchingParent), "no listener of the Gateway has this sectionName and port"
	case allowed:
		return nil, string(gwv1.RouteReasonNoMatchingListenerHostname), "no listener's hostname matches the route's hostnames"
	}
	return nil, string(gwv1.RouteReasonNotAllowedByListeners), "no listener allows routes of this namespace and kind"
}

// checkBackends reports whether every backendRef of the route resolves,
// else the first reason why not.
func (b *builder) checkBackends(r *gwv1.HTTPRoute) (bool, string, string) {
	for _, rule := range r.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			if be := b.backend(r, ref.BackendRef); be.Invalid != "" {
				return false, be.reason, be.Invalid
			}
		}
	}
	return true, string(gwv1.RouteReasonResolvedRefs), ""
}

// resolvedBackend is a backendRef resolved, and the route reason when it
// is invalid.
type resolvedBackend struct {
	*routing.Backend
	reason string
}

func (b *builder) backend(r *gwv1.HTTPRoute, ref gwv1.BackendRef) resolvedBackend {
	ns := r.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	invalid := func(reason, msg string) resolvedBackend {
		return resolvedBackend{&routing.Backend{Service: ns + "/" + string(ref.Name), Invalid: msg}, reason}
	}
	switch {
	case (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Service"):
		return invalid(string(gwv1.RouteReasonInvalidKind), fmt.Sprintf("backend %s is not a Service", ref.Name))
	case ns != r.Namespace && !b.grants.allow(Group, "HTTPRoute", r.Namespace, "", "Service", ns, string(ref.Name)):
		return invalid(string(gwv1.RouteReasonRefNotPermitted), fmt.Sprintf("no ReferenceGrant in namespace %s allows this route to use Service %s", ns, ref.Name))
	case !b.in.Services.Has(ns, string(ref.Name)):
		return invalid(string(gwv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s/%s not found", ns, ref.Name))
	case ref.Port == nil:
		return invalid(string(gwv1.RouteReasonUnsupportedValue), fmt.Sprintf("backend %s names no port", ref.Name))
	}
	return resolvedBackend{b.in.Services.Backend(ns, string(ref.Name), "", *ref.Port), ""}
}

// convert turns the route's rules into routing rules without a host (one
// per match); unsupported says what the route uses that orch does not
// serve ("" when nothing).
func (b *builder) convert(r *gwv1.HTTPRoute) ([]*routing.Rule, string) {
	var out []*routing.Rule
	src := routing.Source{Kind: "HTTPRoute", Name: r.Namespace + "/" + r.Name}
	for i, rule := range r.Spec.Rules {
		switch {
		case rule.Timeouts != nil:
			return nil, fmt.Sprintf("rules[%d].timeouts is not supported", i)
		case rule.Retry != nil:
			return nil, fmt.Sprintf("rules[%d].retry is not supported", i)
		case rule.SessionPersistence != nil:
			return nil, fmt.Sprintf("rules[%d].sessionPersistence is not supported", i)
		}
		filters, err := convertFilters(rule.Filters)
		if err != "" {
			return nil, fmt.Sprintf("rules[%d]: %s", i, err)
		}
		var backends []routing.Weighted
		for j, ref := range rule.BackendRefs {
			if len(ref.Filters) > 0 {
				return nil, fmt.Sprintf("rules[%d].backendRefs[%d].filters is not supported", i, j)
			}
			w := int32(1)
			if ref.Weight != nil {
				w = *ref.Weight
			}
			backends = append(backends, routing.Weighted{Backend: b.backend(r, ref.BackendRef).Backend, Weight: w})
		}
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.HTTPRouteMatch{{}}
		}
		b.order++
		for j, m := range matches {
			rl := &routing.Rule{Path: "/", Filters: filters, Backends: backends, Source: src, Order: orderBase + b.order}
			if err := convertMatch(m, rl); err != "" {
				return nil, fmt.Sprintf("rules[%d].matches[%d]: %s", i, j, err)
			}
			out = append(out, rl)
		}
	}
	return out, ""
}

func convertMatch(m gwv1.HTTPRouteMatch, rl *routing.Rule) string {
	if p := m.Path; p != nil {
		if p.Value != nil {
			rl.Path = *p.Value
		}
		switch {
		case p.Type == nil || *p.Type == gwv1.PathMatchPathPrefix:
		case *p.Type == gwv1.PathMatchExact:
			rl.Exact = true
		default:
			return fmt.Sprintf("path match type %s is not supported", *p.Type)
		}
	}
	// Of entries naming the same header (case-insensitively) or query
	// parameter (exactly), only the first counts, as the API says.
	seen := map[string]bool{}
	for _, h := range m.Headers {
		if h.Type != nil && *h.Type != gwv1.HeaderMatchExact {
			return fmt.Sprintf("header match type %s is not supported", *h.Type)
		}
		name := http.CanonicalHeaderKey(string(h.Name))
		if !seen[name] {
			seen[name] = true
			rl.Headers = append(rl.Headers, routing.Pair{Name: name, Value: h.Value})
		}
	}
	seen = map[string]bool{}
	for _, q := range m.QueryParams {
		if q.Type != nil && *q.Type != gwv1.QueryParamMatchExact {
			return fmt.Sprintf("query parameter match type %s is not supported", *q.Type)
		}
		if !seen[string(q.Name)] {
			seen[string(q.Name)] = true
			rl.Query = append(rl.Query, routing.Pair{Name: string(q.Name), Value: q.Value})
		}
	}
	if m.Method != nil {
		rl.Method = string(*m.Method)
	}
	return ""
}

func convertFilters(fs []gwv1.HTTPRouteFilter) (routing.Filters, string) {
	var out routing.Filters
	for _, f := range fs {
		switch {
		case f.Type == gwv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil:
			out.RequestHeaders = headerChanges(f.RequestHeaderModifier)
		case f.Type == gwv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil:
			out.ResponseHeaders = headerChanges(f.ResponseHeaderModifier)
		case f.Type == gwv1.HTTPRouteFilterRequestRedirect && f.RequestRedirect != nil:
			rd := f.RequestRedirect
			out.Redirect = &routing.Redirect{Path: pathChange(rd.Path)}
			if rd.Scheme != nil {
				out.Redirect.Scheme = *rd.Scheme
			}
			if rd.Hostname != nil {
				out.Redirect.Host = string(*rd.Hostname)
			}
			if rd.Port != nil {
				out.Redirect.Port = *rd.Port
			}
			if rd.StatusCode != nil {
				out.Redirect.Code = *rd.StatusCode
			}
		case f.Type == gwv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil:
			out.Rewrite = &routing.Rewrite{Path: pathChange(f.URLRewrite.Path)}
			if f.URLRewrite.Hostname != nil {
				out.Rewrite.Host = string(*f.URLRewrite.Hostname)
			}
		default:
			return out, fmt.Sprintf("filter %s is not supported", f.Type)
		}
	}
	return out, ""
}

func headerChanges(f *gwv1.HTTPHeaderFilter) *routing.HeaderChanges {
	c := &routing.HeaderChanges{Remove: f.Remove}
	for _, h := range f.Set {
		c.Set = append(c.Set, routing.Pair{Name: string(h.Name), Value: h.Value})
	}
	for _, h := range f.Add {
		c.Add = append(c.Add, routing.Pair{Name: string(h.Name), Value: h.Value})
	}
	return c
}

func pathChange(m *gwv1.HTTPPathModifier) *routing.PathChange {
	switch {
	case m == nil:
		return nil
	case m.Type == gwv1.FullPathHTTPPathModifier && m.ReplaceFullPath != nil:
		return &routing.PathChange{Value: *m.ReplaceFullPath}
	case m.Type == gwv1.PrefixMatchHTTPPathModifier && m.ReplacePrefixMatch != nil:
		return &routing.PathChange{Prefix: true, Value: *m.ReplacePrefixMatch}
	}
	return nil
}
