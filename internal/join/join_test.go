package join

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orch/internal/pki"
)

// fakeServer is an HTTPS server with a real cluster CA that records every
// request (method, path, headers and body) and answers certificate requests
// with answer.
type fakeServer struct {
	*httptest.Server
	bundle *pki.Bundle
	token  string

	mu       sync.Mutex
	requests []recorded
	// validity of the certificates sign makes.
	validity time.Duration
	// answer handles POST CertificatesPath; nil signs the CSRs.
	answer func(w http.ResponseWriter, req CertificatesRequest, n int)
	// old makes sign ignore component CSRs, as a server of an older
	// version does.
	old bool
}

// whoamiPath answers with the common name of the caller's client certificate.
const whoamiPath = "/whoami"

type recorded struct {
	method, path string
	header       http.Header
	body         string
}

func newFakeServer(t *testing.T) *fakeServer { return newFakeServerAt(t, time.Now) }

// newFakeServerAt signs with the clock now.
func newFakeServerAt(t *testing.T, now func() time.Time) *fakeServer {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "localhost", NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{bundle: bundle, token: pki.FormatToken(pki.CAHash(bundle.CACertPEM), "s3cret-value"), validity: time.Hour}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	cert, err := bundle.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	// Client certificates are asked for (never required) so /whoami can
	// tell who called.
	f.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.Header.Clone(), string(body)})
	n := len(f.requests)
	answer := f.answer
	f.mu.Unlock()
	switch r.URL.Path {
	case CACertsPath:
		w.Write(f.bundle.CACertPEM)
	case CertificatesPath:
		var req CertificatesRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if answer != nil {
			answer(w, req, n)
			return
		}
		f.sign(w, req)
	case whoamiPath:
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "anonymous", http.StatusUnauthorized)
			return
		}
		w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
	default:
		http.NotFound(w, r)
	}
}

// sign signs the request's CSRs as they are (the real checks are the
// server's, tested in internal/server).
func (f *fakeServer) sign(w http.ResponseWriter, req CertificatesRequest) {
	var resp CertificatesResponse
	for _, c := range []struct {
		csr   string
		usage x509.ExtKeyUsage
		out   *string
	}{{req.ClientCSR, x509.ExtKeyUsageClientAuth, &resp.ClientCertificate}, {req.ServingCSR, x509.ExtKeyUsageServerAuth, &resp.ServingCertificate}} {
		csr, err := pki.ParseCSRPEM([]byte(c.csr))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, pemData, err := f.bundle.SignCSR(csr, c.usage, f.validity)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		*c.out = string(pemData)
	}
	f.mu.Lock()
	old := f.old
	f.mu.Unlock()
	for user, csrPEM := range req.ComponentCSRs {
		if old {
			break
		}
		csr, err := pki.ParseCSRPEM([]byte(csrPEM))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, pemData, err := f.bundle.SignCSR(csr, x509.ExtKeyUsageClientAuth, f.validity)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if resp.ComponentCertificates == nil {
			resp.ComponentCertificates = map[string]string{}
		}
		resp.ComponentCertificates[user] = string(pemData)
	}
	resp.CA = string(f.bundle.CACertPEM)
	json.NewEncoder(w).Encode(resp)
}

func (f *fakeServer) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

func (f *fakeServer) config(t *testing.T, dataDir string) Config {
	return Config{Server: f.URL, Token: f.token, NodeName: "n1", NodeIPs: []net.IP{net.ParseIP("10.0.0.7")},
		Hostname: "n1.example", DataDir: dataDir, Log: testLog(), initialBackoff: 10 * time.Millisecond, maxBackoff: 50 * time.Millisecond}
}

func testLog() *slog.Logger {
	if os.Getenv("ORCH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func TestConfigErrors(t *testing.T) {
	f := newFakeServer(t)
	for name, tc := range map[string]struct {
		change func(*Config)
		want   string
		is     error
	}{
		"no server":         {func(c *Config) { c.Server = "" }, "--server", nil},
		"http server":       {func(c *Config) { c.Server = "http://10.0.0.1:6443" }, "--server", nil},
		"empty token":       {func(c *Config) { c.Token = "" }, "empty", ErrInvalidToken},
		"spaced passphrase": {func(c *Config) { c.Token = "two words" }, "spaces", ErrInvalidToken},
		"K10 without ::":    {func(c *Config) { c.Token = "K10abc" }, `"::" is missing`, ErrInvalidToken},
		"short hash":        {func(c *Config) { c.Token = "K10abcd::server:x" }, "64 hex", ErrInvalidToken},
		"no secret":         {func(c *Config) { c.Token = "K10" + strings.Repeat("a", 64) + "::server:" }, "secret", ErrInvalidToken},
		"upper node name":   {func(c *Config) { c.NodeName = "Node_1" }, "--node-name", nil},
		"no data dir":       {func(c *Config) { c.DataDir = "" }, "--data-dir", nil},
		"invalid hostname":  {func(c *Config) { c.Hostname = "a..b" }, "hostname", nil},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := f.config(t, t.TempDir())
			tc.change(&cfg)
			_, err := Join(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Join: %v, want an error about %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("the server got %d requests for invalid configurations, want none", n)
	}
}

// TestCAHashMismatch: with a token naming another CA, the agent fetches
// /cacerts and stops; the server never sees the secret.
func TestCAHashMismatch(t *testing.T) {
	f := newFakeServer(t)
	other, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "x"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.config(t, t.TempDir())
	cfg.Token = pki.FormatToken(pki.CAHash(other.CACertPEM), "s3cret-value")
	_, err = Join(context.Background(), cfg)
	if !errors.Is(err, ErrCAHashMismatch) {
		t.Fatalf("Join: %v, want ErrCAHashMismatch", err)
	}
	if !strings.Contains(err.Error(), "wrong token, or a machine in the middle") {
		t.Errorf("message %q does not say what it means", err)
	}
	reqs := f.recorded()
	if len(reqs) != 1 || reqs[0].method != http.MethodGet || reqs[0].path != CACertsPath {
		t.Fatalf("requests %+v, want only GET %s", reqs, CACertsPath)
	}
	for _, r := range reqs {
		if r.header.Get("Authorization") != "" || strings.Contains(r.body, "s3cret") || strings.Contains(r.path, "s3cret") {
			t.Errorf("the secret reached the server: %+v", r)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "agent", "tls", CACertFile)); !os.IsNotExist(err) {
		t.Errorf("the wrong CA was stored: %v", err)
	}
}

// TestRefusalsFailFast: 401, 409 and 400 are not retried.
func TestRefusalsFailFast(t *testing.T) {
	for name, tc := range map[string]struct {
		code int
		msg  string
		is   error
		want string
	}{
		"wrong secret":   {401, "the join token's secret is wrong", ErrUnauthorized, "copy the token again"},
		"name taken":     {409, "node name n1 is already taken by another agent; use --node-name or delete the Secret kube-system/n1.node-password.orch", ErrNodeNameTaken, "use --node-name"},
		"invalid fields": {400, "node IP is bad", ErrRejected, "node IP is bad"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeServer(t)
			f.answer = func(w http.ResponseWriter, _ CertificatesRequest, _ int) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": tc.msg, "code": tc.code})
			}
			_, err := Join(context.Background(), f.config(t, t.TempDir())) // no deadline: a retry would hang
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Join: %v, want %v saying %q", err, tc.is, tc.want)
			}
			posts := 0
			for _, r := range f.recorded() {
				if r.path == CertificatesPath {
					posts++
				}
			}
			if posts != 1 {
				t.Errorf("%d certificate requests, want 1 (no retry)", posts)
			}
		})
	}
}

// TestUnreachableRetriesUntilContextEnds: a server that is not there is
// tried again and again; the last error comes back when ctx ends.
func TestUnreachableRetriesUntilContextEnds(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := newFakeServer(t)
	cfg := f.config(t, t.TempDir())
	cfg.Server = "https://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = Join(ctx, cfg)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "gave up after") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Join: %v, want ErrUnreachable after several attempts", err)
	}
}

// TestJoinStoresAndReuses: a server that answers 503 twice is retried; the
// certificates, keys, kubeconfig and node password are stored with the
// right modes; a second Join uses them without asking the server; after
// the certificates are removed, Join asks again with the same keys and
// node password.
func TestJoinStoresAndReuses(t *testing.T) {
	f := newFakeServer(t)
	var passwords []string
	f.answer = func(w http.ResponseWriter, req CertificatesRequest, n int) {
		passwords = append(passwords, req.NodePassword)
		if n <= 4 { // GET, POST, GET, POST
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		f.sign(w, req)
	}
	dir := t.TempDir()
	cfg := f.config(t, dir)
	creds, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.recorded()); n != 6 {
		t.Errorf("%d requests, want 6 (two refused tries, then one good)", n)
	}
	client := creds.ClientCertificate().Leaf
	if client.Subject.CommonName != "system:node:n1" || client.Subject.Organization[0] != "system:nodes" {
		t.Errorf("client certificate subject %v", client.Subject)
	}
	serving := creds.ServingCertificate().Leaf
	if err := serving.VerifyHostname("n1.example"); err != nil {
		t.Error(err)
	}
	if err := serving.VerifyHostname("10.0.0.7"); err != nil {
		t.Error(err)
	}
	for name, mode := range map[string]os.FileMode{
		"agent/tls/" + CACertFile: 0o644, "agent/tls/" + ClientCertFile: 0o644, "agent/tls/" + ServingCertFile: 0o644,
		"agent/tls/" + ClientKeyFile: 0o600, "agent/tls/" + ServingKeyFile: 0o600,
		"agent/" + KubeconfigFile: 0o600, "agent/" + NodePasswordFile: 0o600,
	} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s has mode %o, want %o", name, st.Mode().Perm(), mode)
		}
	}

	before := len(f.recorded())
	again, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.recorded()); n != before {
		t.Errorf("a second Join sent %d requests, want none (stored certificates are valid)", n-before)
	}
	if !again.ClientCertificate().Leaf.Equal(client) {
		t.Error("the second Join did not reuse the client certificate")
	}

	// With a certificate gone, Join asks the server again, with the same
	// keys and node password.
	os.Remove(filepath.Join(dir, "agent", "tls", ClientCertFile))
	third, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if third.ClientCertificate().Leaf.Equal(client) {
		t.Error("no new certificate after the stored one was removed")
	}
	if pub, ok := client.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(third.ClientCertificate().Leaf.PublicKey) {
		t.Error("the new certificate is not for the stored key")
	}
	if len(passwords) != 4 || passwords[0] != passwords[3] || passwords[0] == "" {
		t.Errorf("node passwords sent %q, want the same one each time", passwords)
	}
}

// TestNotAnOrchServer: a server that answers /cacerts with 401 (an
// apiserver that does not serve joins) is not retried and not mistaken for
// a wrong token.
func TestNotAnOrchServer(t *testing.T) {
	f := newFakeServer(t)
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
	_, err := Join(context.Background(), f.config(t, t.TempDir()))
	if !errors.Is(err, ErrRejected) || errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "is it an orch server") {
		t.Fatalf("Join: %v, want ErrRejected asking whether it is an orch server", err)
	}
}
