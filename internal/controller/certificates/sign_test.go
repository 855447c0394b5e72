package certificates

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/utils/ptr"
)

func TestLifetime(t *testing.T) {
	const year = 365 * 24 * time.Hour
	tests := []struct {
		name    string
		seconds *int32
		max     time.Duration
		want    time.Duration
	}{
		{"not asked: the maximum", nil, year, year},
		{"asked less", ptr.To[int32](3600), year, time.Hour},
		{"asked more: capped", ptr.To[int32](2 * 365 * 24 * 3600), year, year},
		{"asked below 10 minutes: 10 minutes", ptr.To[int32](60), year, 10 * time.Minute},
		{"asked exactly 10 minutes", ptr.To[int32](600), year, 10 * time.Minute},
		{"maximum below 10 minutes wins", ptr.To[int32](3600), 5 * time.Minute, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := lifetime(tt.seconds, tt.max); got != tt.want {
			t.Errorf("%s: lifetime = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestValidity(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	far := now.Add(10 * 365 * 24 * time.Hour)
	tests := []struct {
		name          string
		ttl           time.Duration
		caNotAfter    time.Time
		wantNotAfter  time.Time
		wantErrSubstr string
	}{
		{name: "short-lived keeps its whole lifetime", ttl: time.Hour, caNotAfter: far, wantNotAfter: now.Add(time.Hour)},
		{name: "long-lived loses the backdate", ttl: 24 * time.Hour, caNotAfter: far, wantNotAfter: now.Add(24*time.Hour - backdate)},
		{name: "exactly 8 hours is long-lived", ttl: shortLived, caNotAfter: far, wantNotAfter: now.Add(shortLived - backdate)},
		{name: "capped by the CA", ttl: 24 * time.Hour, caNotAfter: now.Add(time.Hour), wantNotAfter: now.Add(time.Hour)},
		{name: "the CA has expired", ttl: time.Hour, caNotAfter: now.Add(-time.Minute), wantErrSubstr: "the CA expired"},
		{name: "the CA expires now", ttl: time.Hour, caNotAfter: now, wantErrSubstr: "the CA expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notBefore, notAfter, err := validity(now, tt.ttl, tt.caNotAfter)
			if tt.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !notBefore.Equal(now.Add(-backdate)) || !notAfter.Equal(tt.wantNotAfter) {
				t.Errorf("valid %v – %v, want %v – %v", notBefore, notAfter, now.Add(-backdate), tt.wantNotAfter)
			}
		})
	}
}

func TestKeyUsages(t *testing.T) {
	bits, ext, err := keyUsages([]certificatesv1.KeyUsage{certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature,
		certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth, certificatesv1.UsageSigning})
	if err != nil {
		t.Fatal(err)
	}
	if bits != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
		t.Errorf("key usage %b", bits)
	}
	if !slices.Equal(ext, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("extended key usages %v, want server auth, client auth", ext)
	}
	if _, _, err := keyUsages([]certificatesv1.KeyUsage{"teleportation"}); !errors.Is(err, errUnsignable) {
		t.Errorf("an unknown usage: %v, want errUnsignable", err)
	}
}

func TestIssue(t *testing.T) {
	now := time.Now()
	ca := newCA(t, now.Add(365*24*time.Hour))
	key := newKey(t)
	// The request asks for more than it gets: a CA basic constraint and
	// an extension of its own are dropped.
	caConstraint, _ := asn1.Marshal(struct {
		IsCA bool `asn1:"optional"`
	}{true})
	tmpl := &x509.CertificateRequest{Subject: nodeSubject("n1"), DNSNames: []string{"n1.example"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.7")},
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: caConstraint},
			{Id: asn1.ObjectIdentifier{1, 2, 3, 4}, Value: []byte{5, 0}}}}
	req, err := parseRequest(requestPEM(t, key, tmpl))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := ca.issue(req, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, 2*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	cert := parseCert(t, certPEM)
	if cert.Subject.CommonName != "system:node:n1" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %v", cert.Subject)
	}
	if !slices.Equal(cert.DNSNames, []string{"n1.example"}) || len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.7")) {
		t.Errorf("SANs %v %v", cert.DNSNames, cert.IPAddresses)
	}
	if cert.IsCA || !cert.BasicConstraintsValid {
		t.Errorf("IsCA %v, basic constraints valid %v: want a valid non-CA constraint", cert.IsCA, cert.BasicConstraintsValid)
	}
	for _, e := range cert.Extensions {
		if e.Id.Equal(asn1.ObjectIdentifier{1, 2, 3, 4}) {
			t.Error("the request's own extension was copied")
		}
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("usages %b %v", cert.KeyUsage, cert.ExtKeyUsage)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		t.Error("the certificate is not for the request's key")
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Errorf("not signed by the CA: %v", err)
	}
	if got, want := cert.NotAfter.Sub(cert.NotBefore), 2*time.Hour+backdate; got.Round(time.Second) != want {
		t.Errorf("valid for %v, want %v", got, want)
	}

	tampered := *req
	tampered.Signature = slices.Clone(req.Signature)
	tampered.Signature[len(tampered.Signature)-1] ^= 0xff
	if _, err := ca.issue(&tampered, []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}, time.Hour, now); !errors.Is(err, errUnsignable) {
		t.Errorf("a request whose signature does not verify: %v, want errUnsignable", err)
	}
}

func TestCACheck(t *testing.T) {
	ca := newCA(t, time.Now().Add(time.Hour))
	if err := ca.check(); err != nil {
		t.Fatal(err)
	}
	if err := (CA{Cert: ca.Cert, Key: newKey(t)}).check(); err == nil {
		t.Error("a key that does not match the certificate was accepted")
	}
	if err := (CA{}).check(); err == nil {
		t.Error("no CA was accepted")
	}
	leaf := *ca.Cert
	leaf.IsCA = false
	if err := (CA{Cert: &leaf, Key: ca.Key}).check(); err == nil {
		t.Error("a certificate that is not a CA was accepted")
	}
}
