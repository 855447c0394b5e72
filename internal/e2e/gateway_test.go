package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orch/internal/gateway"
)

// testGatewayAPI: on TestIngress's cluster (web pods on both nodes, an
// "other" pod), a Gateway of the built-in class "orch" and HTTPRoutes
// applied with kubectl are served on every node: hosts, path, header and
// method matches, a URL rewrite, a redirect, weights, HTTPS with a
// Secret's certificate, a listener on port 80 sharing it with the
// Ingresses; the status says what is attached, with the nodes' addresses;
// a deleted route stops being served.
func testGatewayAPI(t *testing.T, c *netCluster, webNames []string) {
	eventually(t, time.Minute, func() string {
		out := c.s.Run(t, Cmd{Args: []string{"get", "gatewayclass", "orch", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].status}`}})
		if out.Code != 0 || strings.TrimSpace(out.Stdout) != "True" {
			return fmt.Sprintf("GatewayClass orch not Accepted yet: %q %s", out.Stdout, out.Stderr)
		}
		return ""
	})
	var want []string
	for _, f := range gateway.SupportedFeatures {
		want = append(want, string(f))
	}
	if got := c.s.Kubectl(t, "get", "gatewayclass", "orch", "-o", "jsonpath={.status.supportedFeatures[*].name}"); strings.TrimSpace(got) != strings.Join(want, " ") {
		t.Errorf("GatewayClass orch lists the features %q, want %q", got, want)
	}
	dir := t.TempDir()
	cert := writeCert(t, dir, "gw", "secure.gw.example")
	c.s.Kubectl(t, "create", "secret", "tls", "gw-tls", "--cert", filepath.Join(dir, "gw.crt"), "--key", filepath.Join(dir, "gw.key"))
	c.s.KubectlIn(t, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: orch
  listeners:
  - {name: http, protocol: HTTP, port: 8080, hostname: "*.gw.example"}
  - {name: https, protocol: HTTPS, port: 8443, tls: {certificateRefs: [{name: gw-tls}]}}
  - {name: shared, protocol: HTTP, port: 80, hostname: shared.example}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gw, sectionName: http}, {name: gw, sectionName: https}]
  hostnames: [app.gw.example, secure.gw.example]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /}, headers: [{name: x-canary, value: "yes"}]}, {path: {type: Exact, value: /only-post}, method: POST}]
    backendRefs: [{name: other, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /v1}}]
    filters: [{type: URLRewrite, urlRewrite: {hostname: rewritten.example, path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]
    backendRefs: [{name: other, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, port: 8443, statusCode: 301}}]
  - matches: [{path: {type: PathPrefix, value: /split}}]
    backendRefs: [{name: web, port: 80, weight: 1}, {name: other, port: 80, weight: 0}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shared}
spec:
  parentRefs: [{name: gw, sectionName: shared}]
  rules: [{backendRefs: [{name: other, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: lost}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [nowhere.example]
  rules: [{backendRefs: [{name: web, port: 80}]}]
`, "apply", "-f", "-")

	t.Run("status", func(t *testing.T) {
		want := []string{c.ip[c.nodes[0]], c.ip[c.nodes[1]]}
		slices.Sort(want)
		for _, tc := range []struct{ what, jsonpath, want string }{
			{"gateway/gw", `{.status.conditions[?(@.type=="Programmed")].status}`, "True"},
			{"gateway/gw", `{.status.addresses[*].value}`, strings.Join(want, " ")},
			{"gateway/gw", `{.status.listeners[*].attachedRoutes}`, "1 1 1"}, // lost attaches nowhere
			{"httproute/app", `{.status.parents[*].conditions[?(@.type=="Accepted")].status}`, "True True"},
			{"httproute/app", `{.status.parents[0].controllerName}`, "orch.dev/gateway-controller"},
			{"httproute/lost", `{.status.parents[0].conditions[?(@.type=="Accepted")].reason}`, "NoMatchingListenerHostname"},
		} {
			eventually(t, time.Minute, func() string {
				got := strings.TrimSpace(c.s.Kubectl(t, "get", tc.what, "-o", "jsonpath="+tc.jsonpath))
				if got != tc.want {
					return fmt.Sprintf("%s %s = %q, want %q", tc.what, tc.jsonpath, got, tc.want)
				}
				return ""
			})
		}
	})
	t.Run("routes on every node", func(t *testing.T) {
		for _, n := range c.nodes {
			cl := c.frontDoor(n, pool(cert))
			eventually(t, 30*time.Second, func() string {
				if body, resp, err := fetch(cl, "http://app.gw.example:8080/"); err != nil || resp.StatusCode != 200 {
					return fmt.Sprintf("through %s: %v %q", n, err, body)
				}
				return ""
			})
			for _, tc := range []struct {
				method, url string
				header      [2]string
				pods        []string // the answer comes from one of these
				host, path  string   // what the pod saw
			}{
				{"GET", "http://app.gw.example:8080/hello", [2]string{}, webNames, "app.gw.example:8080", "/hello"},
				{"GET", "http://app.gw.example:8080/hello", [2]string{"X-Canary", "yes"}, []string{"other"}, "app.gw.example:8080", "/hello"},
				{"POST", "http://app.gw.example:8080/only-post", [2]string{}, []string{"other"}, "app.gw.example:8080", "/only-post"},
				{"GET", "http://app.gw.example:8080/only-post", [2]string{}, webNames, "app.gw.example:8080", "/only-post"},
				{"GET", "http://app.gw.example:8080/v1/items", [2]string{}, []string{"other"}, "rewritten.example", "/v2/items"},
				{"GET", "http://app.gw.example:8080/split", [2]string{}, webNames, "app.gw.example:8080", "/split"},
				{"GET", "https://secure.gw.example:8443/tls", [2]string{}, webNames, "secure.gw.example:8443", "/tls"},
				{"GET", "http://shared.example/", [2]string{}, []string{"other"}, "shared.example", "/"},
				{"GET", "http://paths.example/exact", [2]string{}, []string{"other"}, "paths.example", "/exact"}, // the Ingress, same port
			} {
				req, _ := http.NewRequest(tc.method, tc.url, nil)
				if tc.header[0] != "" {
					req.Header.Set(tc.header[0], tc.header[1])
				}
				resp, err := cl.Do(req)
				if err != nil {
					t.Errorf("through %s: %s %s: %v", n, tc.method, tc.url, err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				f := strings.Fields(string(body))
				if resp.StatusCode != 200 || len(f) != 3 || !slices.Contains(tc.pods, f[0]) || f[1] != tc.host || f[2] != tc.path {
					t.Errorf("through %s: %s %s %v: %d %q, want an answer of %v that saw %s %s", n, tc.method, tc.url, tc.header, resp.StatusCode, body, tc.pods, tc.host, tc.path)
				}
			}
			_, resp, err := fetch(cl, "http://app.gw.example:8080/old/page")
			if err != nil || resp.StatusCode != 301 || resp.Header.Get("Location") != "https://app.gw.example:8443/old/page" {
				t.Errorf("through %s: redirect: %v %+v", n, err, resp)
			}
			if _, resp, err := fetch(cl, "http://nowhere.example:8080/"); err != nil || resp.StatusCode != 404 {
				t.Errorf("through %s: a host no listener takes: %v %+v, want 404", n, err, resp)
			}
		}
	})
	t.Run("a deleted route is no longer served", func(t *testing.T) {
		c.s.Kubectl(t, "delete", "httproute", "shared")
		cl := c.frontDoor(c.nodes[1], nil)
		eventually(t, 30*time.Second, func() string {
			// Port 80 is the Ingresses' too, but their default backend
			// does not answer the listener's hostname: 404.
			body, resp, err := fetch(cl, "http://shared.example/")
			if err != nil || resp.StatusCode != 404 {
				return fmt.Sprintf("after the delete: %v %q, want 404", err, body)
			}
			return ""
		})
		// Other hosts on port 80 still get the Ingresses' default backend.
		if body, resp, err := fetch(cl, "http://unknown.example/"); err != nil || resp.StatusCode != 200 || !slices.Contains(webNames, strings.Fields(body + " ")[0]) {
			t.Errorf("another host on port 80: %v %q, want the Ingresses' default backend (web)", err, body)
		}
	})
}
