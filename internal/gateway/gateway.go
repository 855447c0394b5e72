// Package gateway is orch's Gateway API implementation (gateway.networking.k8s.io/v1):
// Gateways of a GatewayClass whose controllerName is ControllerName, and
// the HTTPRoutes attached to them, served by every agent's front door on
// the same data path as Ingresses (internal/ingress, internal/routing).
//
// Build is pure: from the classes, Gateways, HTTPRoutes, ReferenceGrants,
// Namespaces, TLS Secrets and Services it computes both what each agent
// serves (the rules and certificates of every listener port) and the
// status the server's controller writes (internal/controller/gateway).
// Both sides run the same Build, so what the status says is attached is
// what every node serves, unless a node cannot open a port (it logs why).
//
// Served: listeners of protocol HTTP and HTTPS (TLS terminated with the
// certificate of a Secret, chosen by SNI); HTTPRoute matches on path
// (Exact, PathPrefix), headers and query parameters (Exact) and method;
// the filters RequestHeaderModifier, ResponseHeaderModifier,
// RequestRedirect and URLRewrite; weighted Service backends, across
// namespaces where a ReferenceGrant allows. Listeners of other protocols
// are not accepted (UnsupportedProtocol); a route, Gateway or listener using
// a feature not listed here is not accepted (UnsupportedValue), rather than served
// differently from what it says: in a route, RegularExpression matches,
// other filters, backendRef filters, timeouts, retry and session
// persistence; in a Gateway, spec.tls (client certificates, backend TLS),
// spec.addresses and parametersRef; in a listener, tls.options and more
// than one certificateRef. Every Gateway's listeners are served on
// every node's addresses, which are the Gateway's status addresses; two
// Gateways with a listener on the same port share it (their routes are
// merged), and one Gateway's listeners on a port must use one protocol.
package gateway

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"orch/internal/routing"
)

// ControllerName is the spec.controllerName of orch's GatewayClasses.
const ControllerName gwv1.GatewayController = "orch.dev/gateway-controller"

// Group is the Gateway API group.
const Group = gwv1.GroupName

// Input is everything Build depends on.
type Input struct {
	Classes    []*gwv1.GatewayClass
	Gateways   []*gwv1.Gateway
	Routes     []*gwv1.HTTPRoute
	Grants     []*gwv1.ReferenceGrant
	Namespaces []*v1.Namespace
	// Secrets are the TLS Secrets, by namespace/name.
	Secrets  map[string]*v1.Secret
	Services *routing.Services
}

// Result is what Build computes.
type Result struct {
	// Ports are the listener ports to serve and what each serves.
	Ports map[int32]*Port
	// Classes are orch's GatewayClasses, by name: "" when accepted, else
	// why not (only a class without parametersRef is).
	Classes map[string]string
	// Gateways are the status of orch's Gateways, by namespace/name
	// (without addresses, which the controller knows).
	Gateways map[string]*GatewayStatus
	// Routes are, by namespace/name, the status of each HTTPRoute's parents
	// that are orch's Gateways.
	Routes map[string][]gwv1.RouteParentStatus
}

// Port is what one listener port serves.
type Port struct {
	TLS   bool
	Rules []*routing.Rule
	// Hosts are the hostnames of the port's listeners ("" for a listener
	// without one): requests for them that no rule matches get 404, not
	// an Ingress's default backend on a port both serve.
	Hosts []string
	// Certs maps a listener hostname ("" for a listener without one, "*.x"
	// for a wildcard) to the Secret (namespace/name) it is served with.
	Certs map[string]string
}

// GatewayStatus is a Gateway's conditions and listeners' status.
type GatewayStatus struct {
	Conditions []metav1.Condition
	Listeners  []gwv1.ListenerStatus
	// Programmed is true when at least one listener is served.
	Programmed bool
}

// SupportedFeatures are the features of Gateway API's conformance suite
// that orch's GatewayClasses serve and pass (docs/conformance.md), sorted
// by name, as GatewayClass status.supportedFeatures must be: the suite
// tests what a class lists there.
var SupportedFeatures = []gwv1.FeatureName{
	"Gateway",
	"GatewayPort8080",
	"HTTPRoute",
	"HTTPRoute303RedirectStatusCode",
	"HTTPRoute307RedirectStatusCode",
	"HTTPRoute308RedirectStatusCode",
	"HTTPRouteBackendProtocolWebSocket",
	"HTTPRouteHostRewrite",
	"HTTPRouteMethodMatching",
	"HTTPRouteNamedRouteRule",
	"HTTPRouteParentRefPort",
	"HTTPRoutePathRedirect",
	"HTTPRoutePathRewrite",
	"HTTPRoutePortRedirect",
	"HTTPRouteQueryParamMatching",
	"HTTPRouteResponseHeaderModification",
	"HTTPRouteSchemeRedirect",
	"ReferenceGrant",
}

// orderBase puts HTTPRoutes' rules after Ingresses' (which count from 0)
// where precedence ties on a port both use.
const orderBase = 1 << 30

// Build computes what is served and the status of orch's Gateway API
// objects. Gateways and HTTPRoutes are taken oldest first (then by
// namespace/name): the older one wins a port's protocol and a tie of
// route precedence.
func Build(in Input) *Result {
	res := &Result{Ports: map[int32]*Port{}, Classes: map[string]string{}, Gateways: map[string]*GatewayStatus{}, Routes: map[string][]gwv1.RouteParentStatus{}}
	if in.Services == nil {
		in.Services = routing.NewServices(nil, nil)
	}
	ours := map[string]bool{}
	for _, c := range in.Classes {
		switch {
		case c.Spec.ControllerName != ControllerName || c.DeletionTimestamp != nil:
		case c.Spec.ParametersRef != nil:
			res.Classes[c.Name] = "orch's GatewayClasses take no parameters (spec.parametersRef)"
		default:
			ours[c.Name] = true
			res.Classes[c.Name] = ""
		}
	}
	b := &builder{in: in, res: res, gateways: map[string]*gateway{}, grants: newGrants(in.Grants), nsLabels: map[string]map[string]string{}}
	for _, ns := range in.Namespaces {
		b.nsLabels[ns.Name] = ns.Labels
	}
	gws := append([]*gwv1.Gateway(nil), in.Gateways...)
	sortByAge(gws, func(g *gwv1.Gateway) *metav1.ObjectMeta { return &g.ObjectMeta })
	for _, gw := range gws {
		if ours[string(gw.Spec.GatewayClassName)] && gw.DeletionTimestamp == nil {
			b.addGateway(gw)
		}
	}
	routes := append([]*gwv1.HTTPRoute(nil), in.Routes...)
	sortByAge(routes, func(r *gwv1.HTTPRoute) *metav1.ObjectMeta { return &r.ObjectMeta })
	for _, r := range routes {
		if r.DeletionTimestamp == nil {
			b.addRoute(r)
		}
	}
	for key, g := range b.gateways {
		res.Gateways[key] = g.status()
	}
	return res
}

func sortByAge[T any](objs []T, meta func(T) *metav1.ObjectMeta) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := meta(objs[i]), meta(objs[j])
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
}

type builder struct {
	in       Input
	res      *Result
	gateways map[string]*gateway // orch's, by namespace/name
	grants   *grants
	nsLabels map[string]map[string]string
	order    int
}

func condition(typ string, ok bool, reason, msg string, gen int64) metav1.Condition {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen}
}
