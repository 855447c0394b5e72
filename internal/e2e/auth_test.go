package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// TestAnonymous: without a client certificate only the health endpoints
// and /version answer; everything else is 401 with a metav1.Status.
func TestAnonymous(t *testing.T) {
	s := StartServer(t)
	anon := s.Anonymous(t)

	for _, p := range []string{"/api/v1/namespaces", "/api", "/apis", "/api/v1/namespaces/default/services/kubernetes", "/openapi/v2"} {
		r := anon.Do(t, "GET", s.URL()+p, nil, nil)
		expectStatus(t, "anonymous GET "+p, r, http.StatusUnauthorized, metav1.StatusReasonUnauthorized)
	}
	r := anon.Do(t, "POST", s.URL()+"/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`),
		map[string]string{"Content-Type": "application/json"})
	expectStatus(t, "anonymous POST namespace", r, http.StatusUnauthorized, metav1.StatusReasonUnauthorized)

	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		r := anon.Do(t, "GET", s.URL()+p, nil, nil)
		if r.Code != 200 || string(r.Body) != "ok" {
			t.Errorf("anonymous GET %s: %s, want 200 ok", p, r.describe())
		}
	}
	r = anon.Do(t, "GET", s.URL()+"/readyz?verbose", nil, nil)
	if r.Code != 200 || !strings.Contains(string(r.Body), "[+]etcd ok") || !strings.Contains(string(r.Body), "readyz check passed") {
		t.Errorf("GET /readyz?verbose: %s, want per-check lines with [+]etcd ok", r.describe())
	}
	r = anon.Do(t, "GET", s.URL()+"/version", nil, nil)
	var info version.Info
	if err := json.Unmarshal(r.Body, &info); r.Code != 200 || err != nil {
		t.Fatalf("anonymous GET /version: %s (%v)", r.describe(), err)
	}
	if info.Major != "1" || info.Minor != "37" || !strings.HasPrefix(info.GitVersion, "v1.37.2+orch.") || info.Platform == "" {
		t.Errorf("/version: %+v, want 1.37, v1.37.2+orch.…", info)
	}
}

// TestUntrustedClientCert: a certificate from another CA (say, a kubeconfig
// of a cluster that was reinstalled) is not an identity. Upstream requests
// client certificates without requiring them at the TLS layer and treats an
// unverifiable one as no identity: 401 Unauthorized on the API, 200 on
// /healthz; it does not abort the TLS handshake.
func TestUntrustedClientCert(t *testing.T) {
	s := StartServer(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	anon := s.Anonymous(t)
	tc := anon.c.Transport.(*http.Transport).TLSClientConfig.Clone()
	tc.Certificates = []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}
	c := newHTTPClient(tc)

	r, err := c.do("GET", s.URL()+"/api/v1/namespaces", nil, nil)
	if err != nil {
		t.Fatalf("GET /api/v1/namespaces with an untrusted client certificate: %v, want HTTP 401 Unauthorized", err)
	}
	expectStatus(t, "untrusted cert GET /api/v1/namespaces", r, http.StatusUnauthorized, metav1.StatusReasonUnauthorized)
	r, err = c.do("GET", s.URL()+"/healthz", nil, nil)
	if err != nil || r.Code != 200 {
		t.Errorf("GET /healthz with an untrusted client certificate: %v %s, want 200", err, r.describe())
	}
}
