package gateway

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// grants answers whether a ReferenceGrant allows a reference across
// namespaces.
type grants struct {
	byNS map[string][]*gwv1.ReferenceGrant
}

func newGrants(gs []*gwv1.ReferenceGrant) *grants {
	g := &grants{byNS: map[string][]*gwv1.ReferenceGrant{}}
	for _, rg := range gs {
		g.byNS[rg.Namespace] = append(g.byNS[rg.Namespace], rg)
	}
	return g
}

// allow: an object of fromGroup/fromKind in fromNS may refer to the
// object toGroup/toKind toNS/toName when a ReferenceGrant in toNS says so.
func (g *grants) allow(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	for _, rg := range g.byNS[toNS] {
		from := false
		for _, f := range rg.Spec.From {
			if string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS {
				from = true
				break
			}
		}
		if !from {
			continue
		}
		for _, t := range rg.Spec.To {
			if string(t.Group) == toGroup && string(t.Kind) == toKind && (t.Name == nil || string(*t.Name) == toName) {
				return true
			}
		}
	}
	return false
}

// namespaceAllowed: the listener of a Gateway in gwNS takes routes from
// routeNS (allowedRoutes.namespaces: Same by default, All, Selector).
func (b *builder) namespaceAllowed(l *gwv1.Listener, gwNS, routeNS string) bool {
	from := gwv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil {
		if l.AllowedRoutes.Namespaces.From != nil {
			from = *l.AllowedRoutes.Namespaces.From
		}
		sel = l.AllowedRoutes.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return gwNS == routeNS
	case gwv1.NamespacesFromSelector:
		if sel == nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && s.Matches(labels.Set(b.nsLabels[routeNS]))
	}
	return false
}

// intersect is the hostnames a route attached to a listener serves: the
// route's hostnames the listener's hostname allows (a wildcard in either
// taking the more specific of the two), or the one that is set; [""]
// when neither is (any host). None: the route's hostnames and the
// listener's have nothing in common.
func intersect(listener *gwv1.Hostname, route []gwv1.Hostname) []string {
	lh := ""
	if listener != nil {
		lh = strings.ToLower(string(*listener))
	}
	if len(route) == 0 {
		return []string{lh}
	}
	var out []string
	seen := map[string]bool{}
	for _, h := range route {
		rh := strings.ToLower(string(h))
		var got string
		switch {
		case lh == "" || lh == rh:
			got = rh
		case wildcardMatches(lh, rh):
			got = rh
		case wildcardMatches(rh, lh):
			got = lh
		}
		if got != "" && !seen[got] {
			seen[got] = true
			out = append(out, got)
		}
	}
	return out
}

// wildcardMatches: pattern "*.x" covers host (a name, or a wildcard
// "*.y.x" more specific than it) with one or more labels before ".x".
func wildcardMatches(pattern, host string) bool {
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	label, ok := strings.CutSuffix(host, suffix)
	return ok && label != "" && label != "*"
}
