package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/pki"
)

// TestRenewal: with an injected clock, nothing happens while more than a
// third of the certificates' life remains; past that, both are renewed with
// new keys, stored, put in the kubeconfig, and handed out by the TLS
// callbacks without a restart. A failed renewal is retried.
func TestRenewal(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := newFakeServerAt(t, clk.Now)
	f.validity = pki.LeafValidity
	dir := t.TempDir()
	cfg := f.config(t, dir)
	cfg.Clock = clk
	creds, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	oldClient, oldServing := creds.ClientCertificate(), creds.ServingCertificate()
	r, err := NewRenewer(cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	waitForWaiter := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the renewer never waited on the clock")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	posts := func() int {
		n := 0
		for _, r := range f.recorded() {
			if r.path == CertificatesPath {
				n++
			}
		}
		return n
	}

	// Seven months in, more than a third of a year remains: no renewal.
	waitForWaiter()
	before := posts()
	clk.Step(7 * 30 * 24 * time.Hour)
	waitForWaiter()
	if posts() != before || creds.ClientCertificate() != oldClient {
		t.Fatal("renewed with more than a third of the life left")
	}

	// The server fails once; then, nine months in, both are renewed.
	f.mu.Lock()
	f.answer = func(w http.ResponseWriter, req CertificatesRequest, n int) {
		f.mu.Lock()
		f.answer = nil
		f.mu.Unlock()
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}
	f.mu.Unlock()
	clk.Step(2 * 30 * 24 * time.Hour)
	deadline := time.Now().Add(30 * time.Second)
	for creds.ClientCertificate() == oldClient {
		if time.Now().After(deadline) {
			t.Fatal("the certificates were not renewed")
		}
		// Let the retry after the failure happen.
		if clk.HasWaiters() {
			clk.Step(time.Second)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := posts() - before; got != 2 {
		t.Errorf("%d certificate requests for the renewal, want 2 (one refused, one good)", got)
	}
	newClient, newServing := creds.ClientCertificate(), creds.ServingCertificate()
	if newServing == oldServing {
		t.Error("the serving certificate was not renewed")
	}
	if !newClient.Leaf.NotAfter.After(oldClient.Leaf.NotAfter) {
		t.Errorf("renewed certificate expires %s, not after the old %s", newClient.Leaf.NotAfter, oldClient.Leaf.NotAfter)
	}
	if pub, ok := newClient.Leaf.PublicKey.(interface{ Equal(any) bool }); ok && pub.Equal(oldClient.Leaf.PublicKey) {
		t.Error("renewal kept the old key")
	}
	got, err := creds.ClientTLSConfig().GetClientCertificate(nil)
	if err != nil || got != newClient {
		t.Error("the client TLS callback does not hand out the new certificate")
	}
	got, err = creds.ServingTLSConfig().GetCertificate(nil)
	if err != nil || got != newServing {
		t.Error("the serving TLS callback does not hand out the new certificate")
	}
	stored, err := os.ReadFile(filepath.Join(dir, "agent", "tls", ClientCertFile))
	if err != nil {
		t.Fatal(err)
	}
	if cert, err := pki.ParseCertificatePEM(stored); err != nil || !cert.Equal(newClient.Leaf) {
		t.Errorf("stored client certificate is not the new one: %v", err)
	}
	kc, err := clientcmd.LoadFromFile(filepath.Join(dir, "agent", KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if cert, err := pki.ParseCertificatePEM(kc.AuthInfos[pki.KubeconfigName].ClientCertificateData); err != nil || !cert.Equal(newClient.Leaf) {
		t.Errorf("kubeconfig does not hold the new client certificate: %v", err)
	}
	// A new start uses the renewed files.
	again, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !again.ClientCertificate().Leaf.Equal(newClient.Leaf) {
		t.Error("a restart does not use the renewed certificate")
	}
	if _, err := newServing.Leaf.Verify(x509.VerifyOptions{Roots: creds.CAPool(), DNSName: "n1.example", CurrentTime: clk.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Error(err)
	}
}

func TestRenewAt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cert := func(days int) *x509.Certificate {
		return &x509.Certificate{NotBefore: now, NotAfter: now.Add(time.Duration(days) * 24 * time.Hour)}
	}
	for name, tc := range map[string]struct {
		live  liveCerts
		known bool
		want  time.Time
	}{
		"serving shorter": {liveCerts{client: tlsCert(cert(300)), serving: tlsCert(cert(30))}, true, now.Add(20 * 24 * time.Hour)},
		"client shorter":  {liveCerts{client: tlsCert(cert(30)), serving: tlsCert(cert(300))}, true, now.Add(20 * 24 * time.Hour)},
		"a component shorter": {liveCerts{client: tlsCert(cert(300)), serving: tlsCert(cert(300)),
			components: map[string]*tls.Certificate{KubeProxyUser: ptr(tlsCert(cert(300))), DNSUser: ptr(tlsCert(cert(3)))}}, true, now.Add(2 * 24 * time.Hour)},
		"stored before components": {liveCerts{client: tlsCert(cert(300)), serving: tlsCert(cert(300))}, false, time.Time{}},
	} {
		t.Run(name, func(t *testing.T) {
			c := &Credentials{live: &tc.live, issued: &issuedCerts{componentsKnown: tc.known}}
			if got := c.renewAt(); !got.Equal(tc.want) {
				t.Errorf("renewAt = %s, want %s (two thirds of the shortest life)", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func tlsCert(leaf *x509.Certificate) tls.Certificate { return tls.Certificate{Leaf: leaf} }
