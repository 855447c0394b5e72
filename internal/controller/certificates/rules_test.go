package certificates

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
)

func TestValidateRequest(t *testing.T) {
	const (
		client  = certificatesv1.KubeAPIServerClientSignerName
		kubelet = certificatesv1.KubeAPIServerClientKubeletSignerName
		serving = certificatesv1.KubeletServingSignerName
	)
	u := func(us ...certificatesv1.KeyUsage) []certificatesv1.KeyUsage { return us }
	var (
		sig    = certificatesv1.UsageDigitalSignature
		keyEnc = certificatesv1.UsageKeyEncipherment
		cAuth  = certificatesv1.UsageClientAuth
		sAuth  = certificatesv1.UsageServerAuth
	)
	node := nodeSubject("n1")
	ip := []net.IP{net.ParseIP("10.0.0.1")}
	uri, _ := url.Parse("spiffe://cluster/n1")
	tests := []struct {
		name      string
		signer    string
		req       x509.CertificateRequest
		usages    []certificatesv1.KeyUsage
		wantKnown bool
		wantErr   string
	}{
		{name: "node client", signer: kubelet, req: x509.CertificateRequest{Subject: node}, usages: u(sig, cAuth), wantKnown: true},
		{name: "node client with key encipherment", signer: kubelet, req: x509.CertificateRequest{Subject: node}, usages: u(keyEnc, cAuth, sig), wantKnown: true},
		{name: "node client, usages repeated", signer: kubelet, req: x509.CertificateRequest{Subject: node}, usages: u(sig, cAuth, cAuth), wantKnown: true},
		{name: "node client, no organization", signer: kubelet, usages: u(sig, cAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1"}}, wantErr: "subject organization is not system:nodes"},
		{name: "node client, two organizations", signer: kubelet, usages: u(sig, cAuth), wantKnown: true,
			req:     x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes", "system:masters"}}},
			wantErr: "subject organization is not system:nodes"},
		{name: "node client, not a node", signer: kubelet, usages: u(sig, cAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice", Organization: []string{"system:nodes"}}}, wantErr: "subject common name does not begin with system:node:"},
		{name: "node client, DNS name", signer: kubelet, usages: u(sig, cAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: node, DNSNames: []string{"n1"}}, wantErr: "DNS subjectAltNames are not allowed"},
		{name: "node client, IP address", signer: kubelet, usages: u(sig, cAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: node, IPAddresses: ip}, wantErr: "IP subjectAltNames are not allowed"},
		{name: "node client, e-mail", signer: kubelet, usages: u(sig, cAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: node, EmailAddresses: []string{"n1@example.com"}}, wantErr: "Email subjectAltNames are not allowed"},
		{name: "node client, URI", signer: kubelet, usages: u(sig, cAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: node, URIs: []*url.URL{uri}}, wantErr: "URI subjectAltNames are not allowed"},
		{name: "node client, server auth too", signer: kubelet, req: x509.CertificateRequest{Subject: node}, usages: u(sig, cAuth, sAuth), wantKnown: true,
			wantErr: "usages did not match [client auth digital signature key encipherment]"},
		{name: "node client, no digital signature", signer: kubelet, req: x509.CertificateRequest{Subject: node}, usages: u(cAuth), wantKnown: true,
			wantErr: "usages did not match [client auth digital signature key encipherment]"},

		{name: "serving, DNS name", signer: serving, req: x509.CertificateRequest{Subject: node, DNSNames: []string{"n1"}}, usages: u(sig, sAuth), wantKnown: true},
		{name: "serving, IP address, RSA usages", signer: serving, req: x509.CertificateRequest{Subject: node, IPAddresses: ip}, usages: u(sig, keyEnc, sAuth), wantKnown: true},
		{name: "serving, no SAN", signer: serving, req: x509.CertificateRequest{Subject: node}, usages: u(sig, sAuth), wantKnown: true,
			wantErr: "DNS or IP subjectAltName is required"},
		{name: "serving, e-mail", signer: serving, usages: u(sig, sAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: node, DNSNames: []string{"n1"}, EmailAddresses: []string{"a@b.c"}}, wantErr: "Email subjectAltNames are not allowed"},
		{name: "serving, URI", signer: serving, usages: u(sig, sAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: node, IPAddresses: ip, URIs: []*url.URL{uri}}, wantErr: "URI subjectAltNames are not allowed"},
		{name: "serving, client auth", signer: serving, req: x509.CertificateRequest{Subject: node, DNSNames: []string{"n1"}}, usages: u(sig, cAuth), wantKnown: true,
			wantErr: "usages did not match [digital signature key encipherment server auth]"},
		{name: "serving, not a node", signer: serving, usages: u(sig, sAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "web", Organization: []string{"system:nodes"}}, DNSNames: []string{"web"}}, wantErr: "subject common name does not begin with system:node:"},
		{name: "serving, wrong organization", signer: serving, usages: u(sig, sAuth), wantKnown: true,
			req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"acme"}}, DNSNames: []string{"n1"}}, wantErr: "subject organization is not system:nodes"},

		{name: "apiserver client", signer: client, req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, usages: u(cAuth), wantKnown: true},
		{name: "apiserver client, all allowed usages", signer: client, req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}, DNSNames: []string{"x"}},
			usages: u(sig, keyEnc, cAuth), wantKnown: true},
		{name: "apiserver client, server auth", signer: client, req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, usages: u(cAuth, sAuth), wantKnown: true,
			wantErr: "invalid usage for client certificate: server auth"},
		{name: "apiserver client, no client auth", signer: client, req: x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, usages: u(sig), wantKnown: true,
			wantErr: "missing required usage for client certificate: client auth"},

		{name: "legacy-unknown", signer: "kubernetes.io/legacy-unknown", req: x509.CertificateRequest{}, usages: u(sAuth)},
		{name: "someone else's signer", signer: "example.com/foo", req: x509.CertificateRequest{}, usages: u(sAuth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			known, err := ValidateRequest(tt.signer, &tt.req, tt.usages)
			if known != tt.wantKnown {
				t.Errorf("known = %v, want %v", known, tt.wantKnown)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %q, want none", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseRequest(t *testing.T) {
	good := requestPEM(t, newKey(t), &x509.CertificateRequest{Subject: nodeSubject("n1")})
	if req, err := parseRequest(good); err != nil || req.Subject.CommonName != "system:node:n1" {
		t.Fatalf("parseRequest(good) = %v, %v", req, err)
	}
	for name, data := range map[string][]byte{
		"empty":       nil,
		"certificate": []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
		"garbage":     []byte("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"),
	} {
		if _, err := parseRequest(data); err == nil {
			t.Errorf("parseRequest(%s) succeeded", name)
		}
	}
}

func TestConditions(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
		{Type: certificatesv1.CertificateApproved, Status: "True"}, {Type: certificatesv1.CertificateFailed, Status: "False"},
	}}}
	if approved, denied := approval(csr); !approved || denied {
		t.Errorf("approval = %v, %v; want approved, not denied", approved, denied)
	}
	if hasTrueCondition(csr, certificatesv1.CertificateFailed) {
		t.Error("a Failed condition of status False counts as failed")
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed},
		certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied})
	if !hasTrueCondition(csr, certificatesv1.CertificateFailed) {
		t.Error("a Failed condition with no status does not count as failed")
	}
	if _, denied := approval(csr); !denied {
		t.Error("the Denied condition is not seen")
	}
}
