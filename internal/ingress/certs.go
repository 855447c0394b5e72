package ingress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Certs are the certificates served on the TLS port, by host (or
// "*.domain"), from the Secrets the Ingresses' tls sections name.
type Certs struct {
	byHost   map[string]*tls.Certificate
	fallback *tls.Certificate
}

// LoadCerts parses the Secret (tls.crt, tls.key) of every TLS host of
// hosts (host → namespace/name); hosts whose Secret is missing or invalid
// get fallback, and each such problem comes back as an error.
func LoadCerts(hosts map[string]string, secrets map[string]*v1.Secret, fallback *tls.Certificate) (*Certs, []error) {
	c := &Certs{byHost: map[string]*tls.Certificate{}, fallback: fallback}
	parsed := map[string]*tls.Certificate{}
	var errs []error
	for host, key := range hosts {
		cert, ok := parsed[key]
		if !ok {
			s := secrets[key]
			if s == nil {
				errs = append(errs, fmt.Errorf("ingress: TLS Secret %q of host %q not found", key, host))
				parsed[key] = nil
				continue
			}
			kp, err := tls.X509KeyPair(s.Data[v1.TLSCertKey], s.Data[v1.TLSPrivateKeyKey])
			if err != nil {
				errs = append(errs, fmt.Errorf("ingress: TLS Secret %q of host %q: %w", key, host, err))
				parsed[key] = nil
				continue
			}
			cert = &kp
			parsed[key] = cert
		}
		if cert != nil {
			c.byHost[host] = cert
		}
	}
	return c, errs
}

// Get is tls.Config's GetCertificate: the certificate of the name the
// client asked for (SNI), exact or by the most specific wildcard, else
// the fallback.
func (c *Certs) Get(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if cert := c.byHost[name]; cert != nil {
		return cert, nil
	}
	// A wildcard, the most specific first ("*.b.example" then
	// "*.example" for "a.b.example": a Gateway listener's wildcard
	// takes more than one label).
	for rest := name; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			break
		}
		rest = rest[i+1:]
		if cert := c.byHost["*."+rest]; cert != nil {
			return cert, nil
		}
	}
	return c.fallback, nil
}

// selfSigned makes the certificate served to names no Secret covers, as
// other Ingress controllers do: a fresh self-signed one per process.
func selfSigned() (*tls.Certificate, error) {
	certPEM, keyPEM, err := SelfSigned("orch ingress default certificate", "ingress.local")
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	return &cert, err
}

// SelfSigned makes a self-signed server certificate for dnsNames, valid
// for ten years, and its key, both PEM: the default certificate, and the
// tests' Secrets.
func SelfSigned(cn string, dnsNames ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}
