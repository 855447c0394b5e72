package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"orch/internal/controller/nodepassword"
	"orch/internal/join"
	"orch/internal/jointoken"
	"orch/internal/pki"
	"orch/internal/run"
)

// The agent runs the Renewer like every other long-lived component.
var _ run.Runnable = (*join.Renewer)(nil)

func testLogger() *slog.Logger {
	if os.Getenv("ORCH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func csrPEM(t *testing.T, cn string, orgs, dns []string, ips ...string) string {
	t.Helper()
	key, _, err := pki.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	var parsed []net.IP
	for _, s := range ips {
		parsed = append(parsed, net.ParseIP(s))
	}
	data, err := pki.NewCSR(key, cn, orgs, dns, parsed)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCheckCertificatesRequest(t *testing.T) {
	nodes := []string{join.NodesGroup}
	valid := func() join.CertificatesRequest {
		return join.CertificatesRequest{
			NodeName: "n1", Hostname: "n1.example", NodeIPs: []string{"10.0.0.7", "fd00::7"}, NodePassword: "pw",
			ClientCSR:  csrPEM(t, "system:node:n1", nodes, nil),
			ServingCSR: csrPEM(t, "system:node:n1", nodes, []string{"n1.example", "n1"}, "10.0.0.7", "fd00::7"),
			ComponentCSRs: map[string]string{
				join.KubeProxyUser: csrPEM(t, join.KubeProxyUser, nil, nil),
				join.DNSUser:       csrPEM(t, join.DNSUser, nil, nil),
				join.NetworkUser:   csrPEM(t, join.NetworkUser, nil, nil),
			},
		}
	}
	got, err := checkCertificatesRequest(valid())
	if err != nil {
		t.Fatalf("valid request refused: %v", err)
	}
	if len(got.components) != 3 || got.components[join.DNSUser].Subject.CommonName != join.DNSUser {
		t.Errorf("component CSRs %v, want the three users'", got.components)
	}
	older := valid() // an agent of an older version asks for none
	older.ComponentCSRs = nil
	if got, err := checkCertificatesRequest(older); err != nil || got.components != nil {
		t.Errorf("a request without component CSRs: %v, %v", got.components, err)
	}
	for name, tc := range map[string]struct {
		change func(*join.CertificatesRequest)
		want   string
	}{
		"upper-case node name": {func(r *join.CertificatesRequest) { r.NodeName = "N1" }, "node name"},
		"node name too long":   {func(r *join.CertificatesRequest) { r.NodeName = strings.Repeat("a", 240) }, "too long"},
		"bad hostname":         {func(r *join.CertificatesRequest) { r.Hostname = "a_b" }, "hostname"},
		"bad IP":               {func(r *join.CertificatesRequest) { r.NodeIPs = []string{"10.0.0.300"} }, "node IP"},
		"unspecified IP":       {func(r *join.CertificatesRequest) { r.NodeIPs = []string{"0.0.0.0"} }, "node IP"},
		"no password":          {func(r *join.CertificatesRequest) { r.NodePassword = "" }, "password"},
		"client CSR not PEM":   {func(r *join.CertificatesRequest) { r.ClientCSR = "junk" }, "client certificate request"},
		"client CN of another": {func(r *join.CertificatesRequest) { r.ClientCSR = csrPEM(t, "system:node:n2", nodes, nil) }, "CN=system:node:n1"},
		"client as admin": {func(r *join.CertificatesRequest) {
			r.ClientCSR = csrPEM(t, "system:node:n1", []string{"system:masters"}, nil)
		}, "O=system:nodes"},
		"client with SANs": {func(r *join.CertificatesRequest) { r.ClientCSR = csrPEM(t, "system:node:n1", nodes, []string{"n1"}) }, "no DNS names"},
		"component as admin": {func(r *join.CertificatesRequest) {
			r.ComponentCSRs["system:admin"] = csrPEM(t, "system:admin", nil, nil)
		}, `component certificate request for "system:admin": a node's components are only system:kube-proxy, system:orch-dns, system:orch-network`},
		"component with a group": {func(r *join.CertificatesRequest) {
			r.ComponentCSRs[join.DNSUser] = csrPEM(t, join.DNSUser, []string{"system:masters"}, nil)
		}, "CN=system:orch-dns and no O"},
		"component for another user": {func(r *join.CertificatesRequest) {
			r.ComponentCSRs[join.DNSUser] = csrPEM(t, join.KubeProxyUser, nil, nil)
		}, "got CN=system:kube-proxy"},
		"component as a node": {func(r *join.CertificatesRequest) {
			r.ComponentCSRs[join.NetworkUser] = csrPEM(t, "system:node:n2", nodes, nil)
		}, "component certificate request for system:orch-network"},
		"component with SANs": {func(r *join.CertificatesRequest) {
			r.ComponentCSRs[join.KubeProxyUser] = csrPEM(t, join.KubeProxyUser, nil, []string{"kubernetes"})
		}, "no DNS names"},
		"serving other DNS name": {func(r *join.CertificatesRequest) {
			r.ServingCSR = csrPEM(t, "system:node:n1", nodes, []string{"kubernetes"})
		}, `"kubernetes"`},
		"serving other IP": {func(r *join.CertificatesRequest) { r.ServingCSR = csrPEM(t, "system:node:n1", nodes, nil, "10.43.0.1") }, "10.43.0.1"},
		"serving no SANs":  {func(r *join.CertificatesRequest) { r.ServingCSR = csrPEM(t, "system:node:n1", nodes, nil) }, "no DNS name"},
		"serving wrong CN": {func(r *join.CertificatesRequest) { r.ServingCSR = csrPEM(t, "kube-apiserver", nodes, []string{"n1"}) }, "serving certificate request"},
	} {
		t.Run(name, func(t *testing.T) {
			req := valid()
			tc.change(&req)
			_, err := checkCertificatesRequest(req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one about %q", err, tc.want)
			}
		})
	}
}

func TestPasswordHash(t *testing.T) {
	h1, err := hashPassword("one")
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := hashPassword("one")
	if string(h1) == string(h2) {
		t.Error("two hashes of one password are equal: no salt")
	}
	if strings.Contains(string(h1), "one") {
		t.Error("the hash holds the password")
	}
	for _, tc := range []struct {
		stored   []byte
		password string
		want     bool
	}{
		{h1, "one", true}, {h2, "one", true}, {h1, "two", false}, {h1, "", false},
		{nil, "one", false}, {[]byte("one"), "one", false}, {[]byte("pbkdf2-sha256$0$AA$AA"), "one", false},
	} {
		if got := passwordMatches(tc.stored, tc.password); got != tc.want {
			t.Errorf("passwordMatches(%q, %q) = %v", tc.stored, tc.password, got)
		}
	}
}

// TestNodePasswordNamesAgree: the controller (which may not import the agent
// side) and the join handler name the secrets alike.
func TestNodePasswordNamesAgree(t *testing.T) {
	if nodepassword.SecretNamespace != join.PasswordSecretNamespace || nodepassword.SecretSuffix != join.PasswordSecretSuffix ||
		nodepassword.SecretLabel != join.PasswordSecretLabel {
		t.Error("internal/controller/nodepassword and internal/join name the node password secrets differently")
	}
}

// recordingServer serves the real join handler over TLS and records every
// request that reaches it.
type recordingServer struct {
	*httptest.Server
	bundle  *pki.Bundle
	handler *joinHandler
	mu      sync.Mutex
	seen    []*http.Request
	bodies  []string
}

func startRecordingServer(t *testing.T) *recordingServer {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "localhost", NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := jointoken.NewHolder(jointoken.Record{Server: pki.FormatToken(pki.CAHash(bundle.CACertPEM), "the-secret"),
		Agent: pki.FormatAgentToken(pki.CAHash(bundle.CACertPEM), "agent-secret")})
	if err != nil {
		t.Fatal(err)
	}
	h := &joinHandler{bundle: bundle, tokens: tokens, ownSecret: "own-secret", client: fake.NewClientset(), validity: pki.LeafValidity, log: testLogger()}
	rs := &recordingServer{bundle: bundle, handler: h}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "apiserver", http.StatusTeapot) })
	inner := h.wrap(next)
	rs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Clone(context.Background()))
		rs.bodies = append(rs.bodies, string(body))
		rs.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		inner.ServeHTTP(w, r)
	}))
	cert, err := bundle.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	rs.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	rs.StartTLS()
	t.Cleanup(rs.Close)
	return rs
}

// TestTamperedCAHashNeverSendsSecret: against the real handler, a token
// whose CA hash was changed makes the agent stop after GET /cacerts; the
// server never sees the secret.
func TestTamperedCAHashNeverSendsSecret(t *testing.T) {
	rs := startRecordingServer(t)
	hash := []byte(pki.CAHash(rs.bundle.CACertPEM))
	if hash[0] == '0' { // another hex digit
		hash[0] = '1'
	} else {
		hash[0] = '0'
	}
	token := pki.FormatToken(string(hash), "the-secret")
	_, err := join.Join(context.Background(), join.Config{Server: rs.URL, Token: token, NodeName: "n1", DataDir: t.TempDir(), Log: testLogger()})
	if !errors.Is(err, join.ErrCAHashMismatch) {
		t.Fatalf("Join: %v, want ErrCAHashMismatch", err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.seen) != 1 || rs.seen[0].URL.Path != join.CACertsPath {
		t.Fatalf("the server saw %d requests, want only GET %s", len(rs.seen), join.CACertsPath)
	}
	for i, r := range rs.seen {
		if r.Header.Get("Authorization") != "" || strings.Contains(rs.bodies[i], "the-secret") {
			t.Errorf("the secret reached the server in %s %s", r.Method, r.URL.Path)
		}
	}
}

// TestJoinHandlerHTTP: /cacerts is the CA file's bytes for anyone; the
// certificates endpoint wants POST and the secret; other paths go on to the
// apiserver.
func TestJoinHandlerHTTP(t *testing.T) {
	rs := startRecordingServer(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: rs.bundle.CAPool()}}}
	defer client.CloseIdleConnections()
	get := func(path string) (*http.Response, string) {
		resp, err := client.Get(rs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get(join.CACertsPath)
	if resp.StatusCode != http.StatusOK || body != string(rs.bundle.CACertPEM) {
		t.Errorf("GET /cacerts: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(join.CertificatesPath); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: %d, want 405", join.CertificatesPath, resp.StatusCode)
	}
	if resp, _ := get("/api"); resp.StatusCode != http.StatusTeapot {
		t.Errorf("GET /api: %d, want the next handler's 418", resp.StatusCode)
	}
	for name, auth := range map[string][2]string{"no auth": {}, "wrong user": {"admin", "the-secret"}, "wrong secret": {"node", "the-secreT"}} {
		req, _ := http.NewRequest(http.MethodPost, rs.URL+join.CertificatesPath, strings.NewReader("{}"))
		if auth[0] != "" {
			req.SetBasicAuth(auth[0], auth[1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var status struct{ Message string }
		json.NewDecoder(resp.Body).Decode(&status)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(status.Message, "data-dir/server/token") {
			t.Errorf("%s: %d %q, want 401 saying where the token is", name, resp.StatusCode, status.Message)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, rs.URL+join.CertificatesPath, strings.NewReader(`{"nodeName":"n1"}`))
	req.SetBasicAuth(join.TokenUser, "the-secret")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an incomplete request with the right secret: %d, want 400", resp.StatusCode)
	}
}

// TestJoinWaitsForThePolicy: until the authorizer holds the bootstrap
// policy a right request gets 503 and Retry-After (certificates issued then
// would be refused by the apiserver); afterwards it is served.
func TestJoinWaitsForThePolicy(t *testing.T) {
	rs := startRecordingServer(t)
	ready := make(chan struct{})
	h := *rs.handler
	h.policyReady = ready
	post := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, join.CertificatesPath, strings.NewReader(`{"nodeName":"n1"}`))
		req.SetBasicAuth(join.TokenUser, "the-secret")
		rec := httptest.NewRecorder()
		h.serveCertificates(rec, req)
		return rec
	}
	if rec := post(); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "still starting") {
		t.Errorf("before the policy: %d %q %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	close(ready)
	if rec := post(); rec.Code != http.StatusBadRequest {
		t.Errorf("after the policy, an incomplete request: %d, want 400", rec.Code)
	}
}
