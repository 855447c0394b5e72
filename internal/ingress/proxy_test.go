package ingress

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"orch/internal/routing"

	"github.com/gorilla/websocket"
	v1 "k8s.io/api/core/v1"
)

// backend serves its name on every path, and a WebSocket echo on /ws.
func backend(t *testing.T, name string) string {
	t.Helper()
	up := websocket.Upgrader{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				typ, msg, err := c.ReadMessage()
				if err != nil {
					return
				}
				c.WriteMessage(typ, append([]byte(name+": "), msg...))
			}
		}
		if r.Method == http.MethodPost {
			io.WriteString(w, name+" got ")
			io.Copy(w, r.Body)
			return
		}
		io.WriteString(w, name+" "+r.Host+" "+r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// refused is an address where nothing listens.
func refused(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// hostRule routes every path of host (any host when "") to the
// endpoints eps of Service svc.
func hostRule(host, svc string, eps ...string) *routing.Rule {
	return &routing.Rule{Host: host, Path: "/", Source: routing.Source{Kind: "Ingress", Name: "default/web"},
		Backends: []routing.Weighted{{Backend: &routing.Backend{Service: svc, Endpoints: eps}, Weight: 1}}}
}

// setRules makes rules the table of front's port.
func setRules(t *testing.T, p *Proxy, front *httptest.Server, rules ...*routing.Rule) {
	t.Helper()
	p.SetTables(map[int]*routing.Table{portOf(t, front.URL): routing.NewTable(rules, nil)})
}

func portOf(t testing.TB, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func get(t *testing.T, c *http.Client, url, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestProxy(t *testing.T) {
	a, b, down := backend(t, "a"), backend(t, "b"), refused(t)
	p := NewProxy(NewMetrics(), nil)
	front := httptest.NewServer(p)
	defer front.Close()
	setRules(t, p, front, hostRule("web.example", "default/web:80", down, a, b),
		hostRule("empty.example", "default/empty:80"), hostRule("dead.example", "default/dead:80", down))
	c := front.Client()

	// The first request goes to the refusing endpoint first: a POST, whose
	// body must reach the endpoint it is retried on.
	req, _ := http.NewRequest("POST", front.URL+"/form", strings.NewReader("the body"))
	req.Host = "web.example"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasSuffix(string(body), " got the body") {
		t.Errorf("a POST retried after a refused connection: %d %q, want 200 and the body echoed", resp.StatusCode, body)
	}

	seen := map[string]int{}
	for range 10 {
		code, body := get(t, c, front.URL+"/x", "web.example")
		if code != 200 {
			t.Fatalf("web.example: %d %q", code, body)
		}
		f := strings.Fields(body)
		if len(f) != 3 || f[1] != "web.example" || f[2] != "127.0.0.1" {
			t.Errorf("the backend saw %q; want its name, the Host asked for and X-Forwarded-For", body)
		}
		seen[f[0]]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Errorf("requests reached %v; want both live endpoints (the refusing one retried around)", seen)
	}
	for _, tc := range []struct {
		host string
		code int
	}{{"nothing.example", 404}, {"empty.example", 503}, {"dead.example", 502}} {
		if code, body := get(t, c, front.URL+"/", tc.host); code != tc.code {
			t.Errorf("%s: %d %q, want %d", tc.host, code, body, tc.code)
		}
	}

	// A WebSocket through the proxy.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(front.URL, "http")+"/ws", http.Header{"Host": {"web.example"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.ReadMessage(); err != nil || !strings.HasSuffix(string(msg), ": hello") {
		t.Errorf("WebSocket echo: %q, %v", msg, err)
	}
}

// TestTLS: the certificate of the name asked for (SNI), by wildcard too,
// the default one otherwise, and HTTP/2 by ALPN.
func TestTLS(t *testing.T) {
	fallback, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	webCert, webKey := certPEM(t, "web.example")
	wildCert, wildKey := certPEM(t, "*.wild.example")
	secrets := map[string]*v1.Secret{
		"default/web":  tlsSecret(webCert, webKey),
		"default/wild": tlsSecret(wildCert, wildKey),
		"default/bad":  tlsSecret([]byte("not a certificate"), webKey),
	}
	certs, errs := LoadCerts(map[string]string{"web.example": "default/web", "*.wild.example": "default/wild",
		"bad.example": "default/bad", "gone.example": "default/gone"}, secrets, fallback)
	if len(errs) != 2 {
		t.Errorf("errors %v; want one for the bad Secret and one for the missing one", errs)
	}
	p := NewProxy(nil, nil)
	front := httptest.NewUnstartedServer(p)
	front.EnableHTTP2 = true
	front.TLS = &tls.Config{GetCertificate: certs.Get}
	front.StartTLS()
	defer front.Close()
	setRules(t, p, front, hostRule("", "s", backend(t, "a")))
	for _, tc := range []struct{ name, wantCN string }{
		{"web.example", "web.example"}, {"a.wild.example", "*.wild.example"}, {"a.b.wild.example", "*.wild.example"},
		{"bad.example", "orch ingress default certificate"}, {"other.example", "orch ingress default certificate"},
	} {
		tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{ServerName: tc.name, InsecureSkipVerify: true}}
		resp, err := (&http.Client{Transport: tr}).Get(front.URL)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != tc.wantCN {
			t.Errorf("%s: served %q, want %q", tc.name, cn, tc.wantCN)
		}
		if resp.Proto != "HTTP/2.0" {
			t.Errorf("%s: %s, want HTTP/2.0", tc.name, resp.Proto)
		}
	}
}

// certPEM makes a self-signed certificate for name (its CN and DNS name).
func certPEM(t *testing.T, name string) (cert, key []byte) {
	t.Helper()
	cert, key, err := SelfSigned(name, name)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func tlsSecret(cert, key []byte) *v1.Secret {
	return &v1.Secret{Type: v1.SecretTypeTLS, Data: map[string][]byte{v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: key}}
}

// TestFilters: Gateway API's filters and weights on the data path.
func TestFilters(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend-Only", "secret")
		w.Header().Set("X-Server", "echo")
		fmt.Fprintf(w, "%s %s env=%s add=%v drop=%q", r.Host, r.URL.RequestURI(), r.Header.Get("X-Env"), r.Header.Values("X-Add"), r.Header.Get("X-Drop"))
	}))
	defer echo.Close()
	ep := strings.TrimPrefix(echo.URL, "http://")
	p := NewProxy(nil, nil)
	front := httptest.NewServer(p)
	defer front.Close()
	rewrite := hostRule("rewrite.example", "s", ep)
	rewrite.Path = "/api"
	rewrite.Filters = routing.Filters{
		Rewrite:         &routing.Rewrite{Host: "internal", Path: &routing.PathChange{Prefix: true, Value: "/v2"}},
		RequestHeaders:  &routing.HeaderChanges{Set: []routing.Pair{{Name: "X-Env", Value: "prod"}}, Add: []routing.Pair{{Name: "X-Add", Value: "b"}}, Remove: []string{"X-Drop"}},
		ResponseHeaders: &routing.HeaderChanges{Remove: []string{"X-Backend-Only"}, Add: []routing.Pair{{Name: "X-Via", Value: "orch"}}},
	}
	redirect := hostRule("redirect.example", "")
	redirect.Path = "/old"
	redirect.Filters.Redirect = &routing.Redirect{Scheme: "https", Path: &routing.PathChange{Prefix: true, Value: "/new"}, Code: 301}
	samePort := hostRule("moved.example", "")
	samePort.Filters.Redirect = &routing.Redirect{Host: "elsewhere.example"}
	invalid := hostRule("invalid.example", "")
	invalid.Backends[0].Invalid = "Service other/db: not allowed"
	weightless := hostRule("weightless.example", "s", ep)
	weightless.Backends[0].Weight = 0
	setRules(t, p, front, rewrite, redirect, samePort, invalid, weightless)

	req, _ := http.NewRequest("GET", front.URL+"/api/users?x=1", nil)
	req.Host = "rewrite.example"
	req.Header.Set("X-Env", "dev")
	req.Header.Set("X-Add", "a")
	req.Header.Set("X-Drop", "gone")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "internal /v2/users?x=1 env=prod add=[a b] drop=\"\""; string(body) != want {
		t.Errorf("the backend saw %q, want %q", body, want)
	}
	if resp.Header.Get("X-Backend-Only") != "" || resp.Header.Get("X-Via") != "orch" || resp.Header.Get("X-Server") != "echo" {
		t.Errorf("response headers %v: want X-Backend-Only removed, X-Via added, X-Server kept", resp.Header)
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	port := portOf(t, front.URL)
	for _, tc := range []struct {
		host, path string
		code       int
		location   string
	}{
		{"redirect.example", "/old/page?q=1", 301, "https://redirect.example/new/page?q=1"},
		{"moved.example", "/x", 302, fmt.Sprintf("http://elsewhere.example:%d/x", port)},                    // the listener's port
		{"moved.example", "/a%2Fb//c?q", 302, fmt.Sprintf("http://elsewhere.example:%d/a%%2Fb//c?q", port)}, // the path as sent
	} {
		req, _ := http.NewRequest("GET", front.URL+tc.path, nil)
		req.Host = tc.host
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s%s: %d %q, want %d %q", tc.host, tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.code, tc.location)
		}
	}
	for _, host := range []string{"invalid.example", "weightless.example"} {
		if code, body := get(t, front.Client(), front.URL+"/", host); code != 500 {
			t.Errorf("%s: %d %q, want 500", host, code, body)
		}
	}
}

// TestWeights: requests split in proportion to the backends' weights.
func TestWeights(t *testing.T) {
	p := NewProxy(nil, nil)
	front := httptest.NewServer(p)
	defer front.Close()
	rl := hostRule("", "a", backend(t, "a"))
	rl.Backends = append(rl.Backends, routing.Weighted{Backend: &routing.Backend{Service: "b", Endpoints: []string{backend(t, "b")}}, Weight: 3},
		routing.Weighted{Backend: &routing.Backend{Service: "never", Endpoints: []string{backend(t, "never")}}, Weight: 0})
	setRules(t, p, front, rl)
	seen := map[string]int{}
	const n = 400
	for range n {
		_, body := get(t, front.Client(), front.URL+"/", "x")
		seen[strings.Fields(body)[0]]++
	}
	// b has 3 of 4 shares: 300 expected; 240 and 360 are each more than
	// six standard deviations (8.7) away.
	if seen["never"] != 0 || seen["b"] < 240 || seen["b"] > 360 || seen["a"]+seen["b"] != n {
		t.Errorf("requests reached %v; want about 100 a, 300 b and no never", seen)
	}
}
