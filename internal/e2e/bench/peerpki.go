package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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
	var errs [3]error
	p.caPEM, errs[0] = os.ReadFile(p.path("ca.crt"))
	p.adminCert, errs[1] = os.ReadFile(p.path("admin.crt"))
	p.adminKey, errs[2] = os.ReadFile(p.path("admin.key"))
	if errs[0] == nil && errs[1] == nil && errs[2] == nil {
		return p, nil
	}
	return writePeerPKI(dir)
}

// writePeerPKI makes a CA, a serving certificate for 127.0.0.1 and localhost,
// an admin client certificate (O=system:masters, like orch's) and a service
// account signing key, all ECDSA P-256.
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

	issue := func(serial int64, tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
	}
	servingCert, servingKey, err := issue(2, &x509.Certificate{
		Subject: pkix.Name{CommonName: "kube-apiserver"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		return p, err
	}
	p.adminCert, p.adminKey, err = issue(3, &x509.Certificate{
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
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return p, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return p, err
	}
	files := map[string][]byte{
		"ca.crt": p.caPEM, "serving.crt": servingCert, "serving.key": servingKey,
		"sa.key":    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saKeyDER}),
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
