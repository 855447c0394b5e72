// Package ingress is orch's built-in Ingress controller (networking.k8s.io/v1):
// every agent serves the Ingresses of the IngressClass "orch" on its own
// HTTP and HTTPS ports, with Go's reverse proxy and crypto/tls, and no
// process or image besides orch.
//
//   - Build (pure) turns Ingresses, IngressClasses, Services and
//     EndpointSlices into a Table: hosts exact and wildcard ("*.example"
//     matches one label), paths Exact then Prefix by path elements
//     (ImplementationSpecific is Prefix), the longest first, the oldest
//     Ingress winning a host and path two of them route, and the oldest
//     default backend answering the rest. An Ingress is served when its
//     class is "orch" or it names none and "orch" is the default class.
//   - Proxy forwards each request straight to a ready endpoint of the
//     Service (serving terminating ones when none is ready), round-robin;
//     an endpoint that refuses a connection is skipped for ten seconds and
//     the request goes to another (Retries). HTTP/1.1, HTTP/2 (on TLS, by
//     ALPN) and WebSocket upgrades; X-Forwarded-For/-Host/-Proto are set.
//     404: no rule matches; 503: no ready endpoint; 502: none answered.
//   - Certs pick the certificate by the name the client asks for (SNI)
//     from the TLS Secrets the Ingresses name; a fresh self-signed
//     certificate answers other names. A Secret's change is served at the
//     next TLS handshake.
//   - Server follows the API with informers (TLS Secrets only), swaps in a
//     new Table and Certs on every change, and listens once an IngressClass
//     of Controller exists. Metrics count requests and their durations by
//     Ingress and Service.
//
// The Ingresses' status (the nodes' addresses) is written by the server's
// controller (internal/controller/ingressstatus), not by every node.
package ingress
