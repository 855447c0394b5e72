package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"orch/internal/fsutil"
	"os"
	"path/filepath"
)

// ensureCA loads ca.crt and ca.key from b.Dir, or creates them when ca.crt does
// not exist. The key is written before the certificate, so a ca.key without a
// ca.crt is what an interrupted first start leaves behind and is replaced.
func (b *Bundle) ensureCA() error {
	certPath := b.Path(CACertFile)
	keyPath := b.Path(CAKeyFile)

	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		return b.createCA()
	}
	if err != nil {
		return fmt.Errorf("read cluster CA certificate %q: %w", certPath, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cluster CA key %q is missing but %q exists: restore the key from a backup, "+
			"or remove %q to create a new CA (every agent must then join again with the new token): %w",
			keyPath, certPath, filepath.Dir(certPath), err)
	}
	if err != nil {
		return fmt.Errorf("read cluster CA key %q: %w", keyPath, err)
	}

	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return fmt.Errorf("cluster CA certificate %q is unreadable: %w (restore it from a backup or remove the directory to create a new CA)", certPath, err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("cluster CA key %q is unreadable: %w (restore it from a backup or remove the directory to create a new CA)", keyPath, err)
	}
	if !keyMatches(key, cert) {
		return fmt.Errorf("cluster CA key %q does not belong to certificate %q: restore the matching pair from a backup", keyPath, certPath)
	}
	if !cert.IsCA {
		return fmt.Errorf("cluster CA certificate %q is not a CA certificate: remove the directory to create a new CA", certPath)
	}
	if now := b.now(); now.After(cert.NotAfter) {
		return fmt.Errorf("cluster CA certificate %q expired on %s: remove %q to create a new CA "+
			"(every agent must then join again with the new token)",
			certPath, cert.NotAfter.UTC().Format("2006-01-02"), filepath.Dir(certPath))
	}

	b.CA, b.caKey, b.CACertPEM, b.CAKeyPEM = cert, key, certPEM, keyPEM
	return nil
}

// createCA makes a new self-signed CA and writes it to b.Dir.
func (b *Bundle) createCA() error {
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	now := b.now()
	serial, err := newSerial()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("orch-ca@%d", now.Unix())},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(randReader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("create cluster CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parse new cluster CA certificate: %w", err)
	}
	certPEM := encodeCertPEM(der)

	if err := fsutil.WriteFileAtomic(b.Path(CAKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(b.Path(CACertFile), certPEM, 0o644); err != nil {
		return err
	}
	b.CA, b.caKey, b.CACertPEM, b.CAKeyPEM = cert, key, certPEM, keyPEM
	return nil
}

// LoadCAPool reads a PEM file of one or more CA certificates into a pool.
func LoadCAPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CA certificates %q: %w", path, err)
	}
	pool, err := CAPoolFromPEM(data)
	if err != nil {
		return nil, fmt.Errorf("CA file %q: %w", path, err)
	}
	return pool, nil
}

// CAPoolFromPEM builds a pool from PEM-encoded CA certificates, e.g. the ones
// an agent fetched and checked against its join token.
func CAPoolFromPEM(data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("no PEM CERTIFICATE block found: give a file such as data-dir/server/tls/%s", CACertFile)
	}
	return pool, nil
}
