package pki

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTLSHandshake runs a server with the serving certificate that asks for
// (but does not require) client certificates signed by the CA, as the
// apiserver does, and connects with the admin certificate and the CA pool.
func TestTLSHandshake(t *testing.T) {
	b := mustEnsure(t, testConfig(t.TempDir()))
	serving, err := b.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			fmt.Fprint(w, "anonymous")
			return
		}
		c := r.TLS.PeerCertificates[0]
		fmt.Fprintf(w, "%s/%s", c.Subject.CommonName, strings.Join(c.Subject.Organization, ","))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serving},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    b.CAPool(),
	}
	srv.StartTLS()
	defer srv.Close()

	admin, err := tls.X509KeyPair(b.AdminCertPEM, b.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	nodeCert, nodeKey, err := b.IssueClientCert("system:node:n2", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	node, err := tls.X509KeyPair(nodeCert, nodeKey)
	if err != nil {
		t.Fatal(err)
	}
	stranger := mustEnsure(t, testConfig(t.TempDir()))
	strangerAdmin, err := tls.X509KeyPair(stranger.AdminCertPEM, stranger.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		serverName string
		pool       bool
		cert       *tls.Certificate
		want       string
		wantErr    string
	}{
		{name: "admin by IP", cert: &admin, pool: true, want: "system:admin/system:masters"},
		{name: "admin as kubernetes.default.svc", serverName: "kubernetes.default.svc", cert: &admin, pool: true, want: "system:admin/system:masters"},
		{name: "admin as localhost", serverName: "localhost", cert: &admin, pool: true, want: "system:admin/system:masters"},
		{name: "issued node cert", cert: &node, pool: true, want: "system:node:n2/system:nodes"},
		{name: "no client cert", pool: true, want: "anonymous"},
		{name: "unknown server name", serverName: "evil.example.com", cert: &admin, pool: true, wantErr: "certificate"},
		{name: "client without CA pool", cert: &admin, wantErr: "certificate"},
		{name: "client cert of another CA", cert: &strangerAdmin, pool: true, wantErr: "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &tls.Config{ServerName: tt.serverName}
			if tt.pool {
				cfg.RootCAs = b.CAPool()
			}
			if tt.cert != nil {
				// Always present the certificate: Go's client would leave out
				// one whose issuer the server does not ask for (another CA of
				// a different name), and the server would never see it.
				cert := tt.cert
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			defer client.CloseIdleConnections()

			resp, err := client.Get(srv.URL)
			if tt.wantErr != "" {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("request succeeded, want an error mentioning %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != tt.want {
				t.Errorf("server saw %q, want %q", body, tt.want)
			}
		})
	}
}
