package bench

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// peerPKI is what kube-apiserver needs to serve TLS and trust the admin client
// certificate, written as PEM files under dir by writePeerPKI.
type peerPKI struct {
	dir                 string
	caPEM               []byte
	adminCert, adminKey []byte
}

func (p peerPKI) path(name string) string { return filepath.Join(p.dir, name) }

// ensurePeerPKI loads the files writePeerPKI made in dir, or makes them.
func ensurePeerPKI(dir string) (peerPKI, error) {
	p := peerPKI{dir: dir}
	var errs [4]error
	p.caPEM, errs[0] = os.ReadFile(p.path("ca.crt"))
	p.adminCert, errs[1] = os.ReadFile(p.path("admin.crt"))
	p.adminKey, errs[2] = os.ReadFile(p.path("admin.key"))
	_, errs[3] = os.Stat(p.path("ca.key"))
	if errs[0] == nil && errs[1] == nil && errs[2] == nil && errs[3] == nil {
		return p, nil
	}
	return writePeerPKI(dir)
}

// writePeerPKI makes a CA, a serving certificate for 127.0.0.1 and localhost,
// an admin client certificate (O=system:masters, like orch's) and a service
// account signing key, all ECDSA P-256. The CA key is kept as ca.key, like
// orch's, so that more client certificates can be signed (see loadCA).
func writePeerPKI(dir string) (peerPKI, error) {
	p := peerPKI{dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-peer-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return p, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	servingCert, servingKey, err := issueCert(caCert, caKey, 2, &x509.Certificate{
		Subject: pkix.Name{CommonName: "kube-apiserver"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		return p, err
	}
	p.adminCert, p.adminKey, err = issueCert(caCert, caKey, 3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return p, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, err
	}
	saKeyPEM, err := keyPEM(saKey)
	if err != nil {
		return p, err
	}
	caKeyPEM, err := keyPEM(caKey)
	if err != nil {
		return p, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return p, err
	}
	files := map[string][]byte{
		"ca.crt": p.caPEM, "ca.key": caKeyPEM, "serving.crt": servingCert, "serving.key": servingKey,
		"sa.key":    saKeyPEM,
		"sa.pub":    pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		"admin.crt": p.adminCert, "admin.key": p.adminKey,
	}
	for name, data := range files {
		if err := os.WriteFile(p.path(name), data, 0o600); err != nil {
			return p, err
		}
	}
	return p, nil
}

// issueCert makes a P-256 key and a certificate for it from tmpl (its serial,
// validity and key usage set here), signed by ca with caKey; both as PEM.
func issueCert(ca *x509.Certificate, caKey crypto.Signer, serial int64, tmpl *x509.Certificate) (certPEM, privPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	if privPEM, err = keyPEM(key); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), privPEM, nil
}

// keyPEM encodes key as a PKCS #8 "PRIVATE KEY" block.
func keyPEM(key any) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// loadCA reads the CA certificate and key (ca.crt, ca.key) in dir: orch's
// data-dir/server/tls or the peer's pki directory.
func loadCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, nil, fmt.Errorf("load the CA in %s: %w", dir, err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("the CA key in %s cannot sign", dir)
	}
	return pair.Leaf, key, nil
}
