package ingress

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	p.SetTable(&Table{hosts: map[string][]*route{
		"web.example":   {{path: "/", backend: &Backend{Ingress: "default/web", Service: "default/web:80", Endpoints: []string{down, a, b}}}},
		"empty.example": {{path: "/", backend: &Backend{Service: "default/empty:80"}}},
		"dead.example":  {{path: "/", backend: &Backend{Service: "default/dead:80", Endpoints: []string{down}}}},
	}})
	front := httptest.NewServer(p)
	defer front.Close()
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
	p.SetTable(&Table{any: []*route{{path: "/", backend: &Backend{Service: "s", Endpoints: []string{backend(t, "a")}}}}})
	front := httptest.NewUnstartedServer(p)
	front.EnableHTTP2 = true
	front.TLS = &tls.Config{GetCertificate: certs.Get}
	front.StartTLS()
	defer front.Close()
	for _, tc := range []struct{ name, wantCN string }{
		{"web.example", "web.example"}, {"a.wild.example", "*.wild.example"},
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
