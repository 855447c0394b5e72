package gateway

import (
	"crypto/tls"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gateway is one of orch's Gateways being built.
type gateway struct {
	gw        *gwv1.Gateway
	listeners []*listener
	// accepted is false when the Gateway as a whole is refused.
	accepted       bool
	reason, reject string
}

// listener is one listener and what was found about it.
type listener struct {
	spec   *gwv1.Listener
	status gwv1.ListenerStatus
	// attachable: accepted and not conflicted, so routes attach (and are
	// counted) even when its references do not resolve.
	attachable bool
	valid      bool // served: attachable, its references resolved
	invalid    struct {
		accepted, resolved, conflicted string // reasons, "" when fine
		msg                            string
	}
	secret string // namespace/name of the certificate, for HTTPS
}

var httpRouteKind = gwv1.RouteGroupKind{Group: ptrTo(gwv1.Group(Group)), Kind: "HTTPRoute"}

func ptrTo[T any](v T) *T { return &v }

func hostnameOf(l *gwv1.Listener) string {
	if l.Hostname == nil {
		return ""
	}
	return strings.ToLower(string(*l.Hostname))
}

// addGateway checks an orch Gateway and its listeners, claims their
// ports (the oldest Gateway's protocol wins a port, and its certificate a
// TLS hostname) and keeps it for its routes.
func (b *builder) addGateway(gw *gwv1.Gateway) {
	g := &gateway{gw: gw, accepted: true}
	b.gateways[gw.Namespace+"/"+gw.Name] = g
	switch {
	case len(gw.Spec.Addresses) > 0:
		g.accepted, g.reason, g.reject = false, string(gwv1.GatewayReasonUnsupportedAddress),
			"orch serves a Gateway on every node's addresses; spec.addresses cannot be requested"
	case gw.Spec.Infrastructure != nil && gw.Spec.Infrastructure.ParametersRef != nil:
		g.accepted, g.reason, g.reject = false, string(gwv1.GatewayReasonInvalidParameters),
			"orch's Gateways take no parameters (spec.infrastructure.parametersRef)"
	case gw.Spec.TLS != nil:
		g.accepted, g.reason, g.reject = false, "UnsupportedValue",
			"spec.tls (client certificate validation, backend TLS) is not supported"
	}
	for i := range gw.Spec.Listeners {
		l := &listener{spec: &gw.Spec.Listeners[i], status: gwv1.ListenerStatus{Name: gw.Spec.Listeners[i].Name}}
		g.listeners = append(g.listeners, l)
		b.checkListener(gw, l)
	}
	conflicts(g.listeners)
	for _, l := range g.listeners {
		if !g.accepted || l.invalid.accepted != "" || l.invalid.conflicted != "" {
			continue
		}
		spec, host := l.spec, hostnameOf(l.spec)
		tls := spec.Protocol == gwv1.HTTPSProtocolType
		port := b.res.Ports[spec.Port]
		if port != nil && port.TLS != tls {
			l.invalid.conflicted, l.invalid.msg = string(gwv1.ListenerReasonProtocolConflict),
				fmt.Sprintf("an older Gateway serves port %d with another protocol", spec.Port)
			continue
		}
		if _, taken := port.cert(host); tls && taken && l.invalid.resolved == "" {
			l.invalid.conflicted, l.invalid.msg = string(gwv1.ListenerReasonHostnameConflict),
				fmt.Sprintf("an older Gateway's listener on port %d serves hostname %q with its certificate", spec.Port, host)
			continue
		}
		l.attachable = true
		if l.invalid.resolved != "" {
			continue // routes attach, but nothing is served
		}
		if port == nil {
			port = &Port{TLS: tls, Certs: map[string]string{}}
			b.res.Ports[spec.Port] = port
		}
		if tls {
			port.Certs[host] = l.secret
		}
		port.Hosts = append(port.Hosts, host)
		l.valid = true
	}
}

// cert is the Secret of a host's certificate on the port, if any.
func (p *Port) cert(host string) (string, bool) {
	if p == nil {
		return "", false
	}
	s, ok := p.Certs[host]
	return s, ok
}

// conflicts marks the listeners of one Gateway that are not distinct:
// those of a port whose listeners have different protocols, and those
// sharing a port and hostname. None of them wins (the specification
// forbids picking one).
func conflicts(ls []*listener) {
	protocols := map[int32]map[gwv1.ProtocolType]bool{}
	hosts := map[string]int{}
	key := func(l *listener) string { return fmt.Sprintf("%d/%s", l.spec.Port, hostnameOf(l.spec)) }
	for _, l := range ls {
		if protocols[l.spec.Port] == nil {
			protocols[l.spec.Port] = map[gwv1.ProtocolType]bool{}
		}
		protocols[l.spec.Port][l.spec.Protocol] = true
		hosts[key(l)]++
	}
	for _, l := range ls {
		switch {
		case l.invalid.conflicted != "":
		case len(protocols[l.spec.Port]) > 1:
			l.invalid.conflicted, l.invalid.msg = string(gwv1.ListenerReasonProtocolConflict),
				fmt.Sprintf("listeners of this Gateway on port %d have different protocols", l.spec.Port)
		case hosts[key(l)] > 1:
			l.invalid.conflicted, l.invalid.msg = string(gwv1.ListenerReasonHostnameConflict),
				fmt.Sprintf("listeners of this Gateway share port %d and hostname %q", l.spec.Port, hostnameOf(l.spec))
		}
	}
}

// checkListener finds what is wrong with a listener, if anything: its
// protocol, its route kinds, its certificate.
func (b *builder) checkListener(gw *gwv1.Gateway, l *listener) {
	spec := l.spec
	l.status.SupportedKinds = []gwv1.RouteGroupKind{}
	switch spec.Protocol {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
	default:
		// No route kind is served on it.
		l.invalid.accepted, l.invalid.msg = string(gwv1.ListenerReasonUnsupportedProtocol),
			fmt.Sprintf("protocol %s is not supported (HTTP and HTTPS are)", spec.Protocol)
		return
	}
	if spec.AllowedRoutes == nil || len(spec.AllowedRoutes.Kinds) == 0 {
		l.status.SupportedKinds = append(l.status.SupportedKinds, httpRouteKind)
	} else {
		for _, k := range spec.AllowedRoutes.Kinds {
			if (k.Group == nil || *k.Group == Group) && k.Kind == "HTTPRoute" {
				l.status.SupportedKinds = append(l.status.SupportedKinds, httpRouteKind)
			} else if l.invalid.resolved == "" {
				l.invalid.resolved = string(gwv1.ListenerReasonInvalidRouteKinds)
				l.invalid.msg = fmt.Sprintf("route kind %s is not supported (HTTPRoute is)", k.Kind)
			}
		}
	}
	if spec.Protocol != gwv1.HTTPSProtocolType || l.invalid.accepted != "" {
		return
	}
	switch {
	case spec.TLS == nil || (spec.TLS.Mode != nil && *spec.TLS.Mode != gwv1.TLSModeTerminate):
		l.invalid.accepted, l.invalid.msg = string(gwv1.ListenerReasonUnsupportedValue), "an HTTPS listener terminates TLS (mode Terminate)"
		return
	case len(spec.TLS.Options) > 0:
		l.invalid.accepted, l.invalid.msg = string(gwv1.ListenerReasonUnsupportedValue), "tls.options are not supported"
		return
	case len(spec.TLS.CertificateRefs) > 1:
		l.invalid.accepted, l.invalid.msg = string(gwv1.ListenerReasonUnsupportedValue), "orch serves one certificate per listener (one certificateRef)"
		return
	}
	if len(spec.TLS.CertificateRefs) == 0 {
		l.invalid.resolved, l.invalid.msg = string(gwv1.ListenerReasonInvalidCertificateRef), "an HTTPS listener needs a certificateRef"
		return
	}
	ref := spec.TLS.CertificateRefs[0]
	ns := gw.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	key := ns + "/" + string(ref.Name)
	switch {
	case (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret"):
		l.invalid.resolved, l.invalid.msg = string(gwv1.ListenerReasonInvalidCertificateRef), "a certificateRef must be a Secret"
	case ns != gw.Namespace && !b.grants.allow(Group, "Gateway", gw.Namespace, "", "Secret", ns, string(ref.Name)):
		l.invalid.resolved, l.invalid.msg = string(gwv1.ListenerReasonRefNotPermitted),
			fmt.Sprintf("no ReferenceGrant in namespace %s allows this Gateway to use Secret %s", ns, ref.Name)
	case !validTLS(b.in.Secrets[key]):
		l.invalid.resolved, l.invalid.msg = string(gwv1.ListenerReasonInvalidCertificateRef),
			fmt.Sprintf("Secret %s is not a kubernetes.io/tls Secret with tls.crt and tls.key", key)
	default:
		l.secret = key
	}
}

// validTLS: a kubernetes.io/tls Secret whose certificate and key parse
// and match.
func validTLS(s *v1.Secret) bool {
	if s == nil || s.Type != v1.SecretTypeTLS {
		return false
	}
	_, err := tls.X509KeyPair(s.Data[v1.TLSCertKey], s.Data[v1.TLSPrivateKeyKey])
	return err == nil
}

// status is the Gateway's status without addresses.
func (g *gateway) status() *GatewayStatus {
	gen := g.gw.Generation
	st := &GatewayStatus{}
	allValid, anyAccepted := true, false
	for _, l := range g.listeners {
		ls := l.status
		ok := l.valid
		st.Programmed = st.Programmed || ok
		allValid = allValid && ok
		anyAccepted = anyAccepted || l.invalid.accepted == ""
		accReason, accMsg := string(gwv1.ListenerReasonAccepted), ""
		if l.invalid.accepted != "" {
			accReason, accMsg = l.invalid.accepted, l.invalid.msg
		}
		resReason, resMsg := string(gwv1.ListenerReasonResolvedRefs), ""
		if l.invalid.resolved != "" {
			resReason, resMsg = l.invalid.resolved, l.invalid.msg
		}
		confReason, confMsg := string(gwv1.ListenerReasonNoConflicts), ""
		if l.invalid.conflicted != "" {
			confReason, confMsg = l.invalid.conflicted, l.invalid.msg
		}
		progReason, progMsg := string(gwv1.ListenerReasonProgrammed), ""
		if !ok {
			progReason, progMsg = string(gwv1.ListenerReasonInvalid), l.invalid.msg
			if !g.accepted {
				progMsg = g.reject
			}
		}
		ls.Conditions = append(ls.Conditions,
			condition(string(gwv1.ListenerConditionAccepted), l.invalid.accepted == "", accReason, accMsg, gen),
			condition(string(gwv1.ListenerConditionResolvedRefs), l.invalid.resolved == "", resReason, resMsg, gen),
			condition(string(gwv1.ListenerConditionConflicted), l.invalid.conflicted != "", confReason, confMsg, gen),
			condition(string(gwv1.ListenerConditionProgrammed), ok, progReason, progMsg, gen))
		st.Listeners = append(st.Listeners, ls)
	}
	switch {
	case !g.accepted:
		st.Programmed = false
		st.Conditions = append(st.Conditions, condition(string(gwv1.GatewayConditionAccepted), false, g.reason, g.reject, gen))
	case !anyAccepted:
		st.Conditions = append(st.Conditions, condition(string(gwv1.GatewayConditionAccepted), false,
			string(gwv1.GatewayReasonListenersNotValid), "no listener is accepted; see their conditions", gen))
	case !allValid:
		st.Conditions = append(st.Conditions, condition(string(gwv1.GatewayConditionAccepted), true,
			string(gwv1.GatewayReasonListenersNotValid), "some listeners are not valid; see their conditions", gen))
	default:
		st.Conditions = append(st.Conditions, condition(string(gwv1.GatewayConditionAccepted), true, string(gwv1.GatewayReasonAccepted), "", gen))
	}
	return st
}
