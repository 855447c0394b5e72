package pki

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// What an agent and a server use to move node certificates without moving
// private keys: the agent makes a key and a certificate request (CSR), the
// server checks what the CSR asks for and signs it.

// NewPrivateKey makes an ECDSA P-256 key and its PEM ("EC PRIVATE KEY").
func NewPrivateKey() (crypto.Signer, []byte, error) { return newKey() }

// ParsePrivateKeyPEM parses the first private key in data (SEC 1, PKCS #8 or
// PKCS #1).
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) { return parseKeyPEM(data) }

// ParseCertificatePEM parses the first CERTIFICATE block of data.
func ParseCertificatePEM(data []byte) (*x509.Certificate, error) { return parseCertPEM(data) }

// KeyMatches reports whether key is the private half of cert's public key.
func KeyMatches(key crypto.Signer, cert *x509.Certificate) bool { return keyMatches(key, cert) }

// NewCSR makes a PEM certificate request signed by key for the subject
// CN=cn, O=orgs with the given SANs.
func NewCSR(key crypto.Signer, cn string, orgs, dnsNames []string, ips []net.IP) ([]byte, error) {
	tmpl := &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: cn, Organization: slices.Clone(orgs)},
		DNSNames:    slices.Clone(dnsNames),
		IPAddresses: slices.Clone(ips),
	}
	der, err := x509.CreateCertificateRequest(randReader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("create certificate request for %q: %w", cn, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// ParseCSRPEM parses a PEM certificate request and checks that it is signed
// by the key it carries (so whoever sent it holds that key).
func ParseCSRPEM(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("no PEM CERTIFICATE REQUEST block found")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	if len(csr.EmailAddresses) > 0 || len(csr.URIs) > 0 {
		return nil, errors.New("certificate request asks for e-mail or URI names; only DNS names and IP addresses are signed")
	}
	return csr, nil
}

// SignCSR signs csr (already checked by ParseCSRPEM) with the cluster CA:
// the certificate has the CSR's common name, organizations, DNS names and IP
// addresses, the given extended key usage, and lives for validity (capped at
// the CA's expiry); units, the signer's own, become its organizational
// units. The caller decides whether the CSR may have what it asks for;
// SignCSR copies nothing else from it. It returns the parsed
// certificate and its PEM.
func (b *Bundle) SignCSR(csr *x509.CertificateRequest, usage x509.ExtKeyUsage, validity time.Duration, units ...string) (*x509.Certificate, []byte, error) {
	if csr == nil {
		return nil, nil, errors.New("pki: no certificate request to sign")
	}
	if strings.TrimSpace(csr.Subject.CommonName) == "" {
		return nil, nil, errors.New("pki: the certificate request has no common name")
	}
	if validity <= 0 {
		return nil, nil, fmt.Errorf("pki: certificate for %q needs a positive validity, got %s", csr.Subject.CommonName, validity)
	}
	return b.sign(leafSpec{
		cn: csr.Subject.CommonName, orgs: slices.Clone(csr.Subject.Organization), units: units, usage: usage,
		dnsNames: slices.Clone(csr.DNSNames), ips: slices.Clone(csr.IPAddresses), validity: validity,
	}, csr.PublicKey)
}

// Now is the bundle's clock (time.Now unless Config.Now was set).
func (b *Bundle) Now() time.Time { return b.now() }
