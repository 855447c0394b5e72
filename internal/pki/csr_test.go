package pki

import (
	"crypto/x509"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSignCSR(t *testing.T) {
	b := mustEnsure(t, testConfig(filepath.Join(t.TempDir(), "tls")))
	key, _, err := NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	ips := []net.IP{net.ParseIP("10.0.0.5").To4()}
	csrPEM, err := NewCSR(key, "system:node:n1", []string{"system:nodes"}, []string{"n1.example"}, ips)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := ParseCSRPEM(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	cert, certPEM, err := b.SignCSR(csr, x509.ExtKeyUsageServerAuth, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseCertificatePEM(certPEM)
	if err != nil || !parsed.Equal(cert) {
		t.Fatalf("PEM does not hold the returned certificate: %v", err)
	}
	if !KeyMatches(key, cert) {
		t.Error("certificate is not for the CSR's key")
	}
	if cert.Subject.CommonName != "system:node:n1" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject = %v", cert.Subject)
	}
	if !slices.Equal(cert.DNSNames, []string{"n1.example"}) || len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(ips[0]) {
		t.Errorf("SANs = %v %v", cert.DNSNames, cert.IPAddresses)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: b.CAPool(), DNSName: "n1.example", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("does not verify against the CA: %v", err)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life < time.Hour || life > time.Hour+clockSkew+time.Minute {
		t.Errorf("lifetime %s, want an hour (plus the back-dating)", life)
	}
	if _, _, err := b.SignCSR(csr, x509.ExtKeyUsageClientAuth, 0); err == nil {
		t.Error("zero validity accepted")
	}
}

func TestParseCSRPEMRejects(t *testing.T) {
	key, _, _ := NewPrivateKey()
	good, _ := NewCSR(key, "x", nil, nil, nil)
	tampered := []byte(strings.Replace(string(good), string(good[100:104]), "AAAA", 1))
	for name, data := range map[string][]byte{
		"empty":       nil,
		"certificate": []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
		"tampered":    tampered,
	} {
		if _, err := ParseCSRPEM(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseCSRPEM(good); err != nil {
		t.Errorf("good CSR: %v", err)
	}
}
