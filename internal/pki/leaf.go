package pki

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"orch/internal/fsutil"
	"os"
	"slices"
	"strings"
	"time"
)

// leafSpec describes a certificate signed by the cluster CA.
type leafSpec struct {
	certFile, keyFile string // file names in Bundle.Dir; empty for IssueClientCert
	cn                string
	orgs              []string
	units             []string // the signer's, never the requester's
	usage             x509.ExtKeyUsage
	// bothWays adds client auth to a server certificate (etcd's members
	// dial each other with the certificate they serve with).
	bothWays bool
	dnsNames []string
	ips      []net.IP
	validity time.Duration // 0 means LeafValidity
}

func (spec leafSpec) usages() []x509.ExtKeyUsage {
	if spec.bothWays {
		return []x509.ExtKeyUsage{spec.usage, x509.ExtKeyUsageClientAuth}
	}
	return []x509.ExtKeyUsage{spec.usage}
}

// ensureLeaf loads the leaf in spec's files if it still fits spec, or issues
// a new one and writes it (key first, then certificate).
func (b *Bundle) ensureLeaf(spec leafSpec) (*x509.Certificate, []byte, []byte, error) {
	certPath, keyPath := b.Path(spec.certFile), b.Path(spec.keyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		if cert, ok := b.leafFits(spec, certPEM, keyPEM); ok {
			return cert, certPEM, keyPEM, nil
		}
	}
	for _, e := range []error{certErr, keyErr} {
		if e != nil && !errors.Is(e, os.ErrNotExist) {
			return nil, nil, nil, fmt.Errorf("read certificate files in %q: %w (check the permissions of --data-dir)", b.Dir, e)
		}
	}

	cert, certPEM, keyPEM, err := b.issue(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := fsutil.WriteFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, nil, err
	}
	if err := fsutil.WriteFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, nil, nil, err
	}
	return cert, certPEM, keyPEM, nil
}

// leafFits reports whether the stored pair can be kept: it parses, the key
// matches, the CA signed it, it has the wanted subject, usage and SANs, and it
// does not expire within RenewBefore.
func (b *Bundle) leafFits(spec leafSpec, certPEM, keyPEM []byte) (*x509.Certificate, bool) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, false
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil || !keyMatches(key, cert) {
		return nil, false
	}
	if cert.CheckSignatureFrom(b.CA) != nil {
		return nil, false
	}
	now := b.now()
	if now.Before(cert.NotBefore) || cert.NotAfter.Sub(now) < RenewBefore {
		return nil, false
	}
	if cert.Subject.CommonName != spec.cn || !sameSet(cert.Subject.Organization, spec.orgs) {
		return nil, false
	}
	for _, usage := range spec.usages() {
		if !slices.Contains(cert.ExtKeyUsage, usage) {
			return nil, false
		}
	}
	return cert, coversSANs(cert, spec.dnsNames, spec.ips)
}

// issue makes a new key and a certificate for it signed by the CA. The
// certificate never outlives the CA.
func (b *Bundle) issue(spec leafSpec) (*x509.Certificate, []byte, []byte, error) {
	if b.CA == nil || b.caKey == nil {
		return nil, nil, nil, errors.New("pki: the bundle has no CA key; create it with Ensure")
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, nil, err
	}
	cert, certPEM, err := b.sign(spec, key.Public())
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, certPEM, keyPEM, nil
}

// sign makes a certificate for pub as spec describes, signed by the CA.
func (b *Bundle) sign(spec leafSpec, pub crypto.PublicKey) (*x509.Certificate, []byte, error) {
	if b.CA == nil || b.caKey == nil {
		return nil, nil, errors.New("pki: the bundle has no CA key; create it with Ensure")
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	validity := spec.validity
	if validity == 0 {
		validity = LeafValidity
	}
	now := b.now()
	notAfter := now.Add(validity)
	if notAfter.After(b.CA.NotAfter) {
		notAfter = b.CA.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.cn, Organization: spec.orgs, OrganizationalUnit: spec.units},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           spec.usages(),
		BasicConstraintsValid: true,
		DNSNames:              spec.dnsNames,
		IPAddresses:           spec.ips,
	}
	der, err := x509.CreateCertificate(randReader, tmpl, b.CA, pub, b.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %q: %w", spec.cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse new certificate for %q: %w", spec.cn, err)
	}
	return cert, encodeCertPEM(der), nil
}

// IssueClientCert issues a client certificate signed by the cluster CA for
// user cn in groups orgs, valid for validity (capped at the CA's expiry). It
// writes nothing; the caller stores or sends the PEMs.
func (b *Bundle) IssueClientCert(cn string, orgs []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if strings.TrimSpace(cn) == "" {
		return nil, nil, errors.New("pki: a client certificate needs a user name (common name)")
	}
	if validity <= 0 {
		return nil, nil, fmt.Errorf("pki: client certificate for %q needs a positive validity, got %s", cn, validity)
	}
	_, certPEM, keyPEM, err = b.issue(leafSpec{
		cn: cn, orgs: slices.Clone(orgs), usage: x509.ExtKeyUsageClientAuth, validity: validity,
	})
	return certPEM, keyPEM, err
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
