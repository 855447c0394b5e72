// Package ingress is orch's built-in Ingress and Gateway controller
// (networking.k8s.io/v1 Ingresses, gateway.networking.k8s.io/v1 Gateways
// and HTTPRoutes): every agent serves them on its own ports, with Go's
// reverse proxy and crypto/tls, and no process or image besides orch.
//
//   - Build (pure) turns Ingresses, IngressClasses, Services and
//     EndpointSlices into routing.Rules: hosts exact and wildcard
//     ("*.example" matches one label), paths Exact and Prefix by path
//     elements (ImplementationSpecific is Prefix), the oldest Ingress
//     winning a host and path two of them route, and the oldest default
//     backend answering the rest. An Ingress is served when its class is
//     "orch" or it names none and "orch" is the default class.
//   - Gateways and HTTPRoutes become rules by internal/gateway's Build,
//     once their definitions are served; plan puts each port's rules and
//     certificates together (the Ingress ports, once an IngressClass of
//     Controller exists, and every Gateway listener's port; a port of both
//     serves both).
//   - Proxy routes each request by the routing.Table of its port, applies
//     the rule's filters (headers, redirect, rewrite) and forwards it
//     straight to a ready endpoint of one of the rule's Services, by
//     weight (serving terminating ones when none is ready), round-robin;
//     an endpoint that refuses a connection is skipped for ten seconds and
//     the request goes to another (Retries). HTTP/1.1, HTTP/2 (on TLS, by
//     ALPN) and WebSocket upgrades; X-Forwarded-For/-Host/-Proto are set.
//     404: no rule matches; 500: no valid backend; 503: no ready
//     endpoint; 502: none answered.
//   - Certs pick the certificate by the name the client asks for (SNI)
//     from the TLS Secrets the Ingresses and listeners name; a listener
//     without a hostname gives the port's default, else a fresh
//     self-signed certificate answers other names. A Secret's change is
//     served at the next TLS handshake.
//   - Server follows the API with informers (TLS Secrets only), swaps in
//     new tables and Certs on every change, and opens and closes the
//     ports the plan asks for. Metrics count requests and their durations
//     by Ingress or HTTPRoute and Service.
//
// The status (the nodes' addresses, what is attached) is written by the
// server's controllers (internal/controller/servicelb for Ingresses,
// internal/controller/gateway for Gateway API), not by every node.
package ingress
