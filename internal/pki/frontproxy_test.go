package pki

import (
	"bytes"
	"crypto/x509"
	"testing"
)

// TestEnsureFrontProxy: a CA of its own (not the cluster's) signs a client
// certificate named front-proxy-client; a second call loads the same.
func TestEnsureFrontProxy(t *testing.T) {
	dir := t.TempDir()
	fp, err := EnsureFrontProxy(dir)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(fp.Client.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName != FrontProxyClientName || len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
		t.Errorf("client certificate %s %v, want %s for client auth", leaf.Subject.CommonName, leaf.ExtKeyUsage, FrontProxyClientName)
	}
	pool, err := CAPoolFromPEM(fp.CACertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate does not chain to the front proxy CA: %v", err)
	}
	cluster, err := Ensure(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(cluster.CACertPEM, fp.CACertPEM) {
		t.Error("the front proxy CA is the cluster CA")
	}
	again, err := EnsureFrontProxy(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.CACertPEM, fp.CACertPEM) || !bytes.Equal(again.Client.Certificate[0], fp.Client.Certificate[0]) {
		t.Error("a second EnsureFrontProxy did not load what the first made")
	}
}
