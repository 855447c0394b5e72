package certificates

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// The lifetimes of issued certificates, as upstream's signer.
const (
	// backdate moves NotBefore back, for clocks a little behind the CA's.
	backdate = 5 * time.Minute
	// minDuration is the shortest certificate issued: twice backdate.
	minDuration = 10 * time.Minute
	// shortLived certificates do not lose backdate at their end (5
	// minutes is about 1% of 8 hours).
	shortLived = 8 * time.Hour
)

// errUnsignable marks a request no retry can sign (a request's spec never
// changes): a bad signature or a usage no certificate can carry.
var errUnsignable = errors.New("the request cannot be signed")

// lifetime is how long a certificate lives whose request asks for
// expirationSeconds (nil: as long as allowed): at most max, at least
// minDuration.
func lifetime(expirationSeconds *int32, max time.Duration) time.Duration {
	if expirationSeconds == nil {
		return max
	}
	switch asked := time.Duration(*expirationSeconds) * time.Second; {
	case asked > max:
		return max
	case asked < minDuration:
		return minDuration
	default:
		return asked
	}
}

// validity is when a certificate of lifetime ttl issued at now is valid:
// from backdate before now, for ttl (less backdate unless short-lived), and
// never past the CA's own NotAfter. A CA that has expired signs nothing.
func validity(now time.Time, ttl time.Duration, caNotAfter time.Time) (notBefore, notAfter time.Time, err error) {
	notBefore = now.Add(-backdate)
	notAfter = now.Add(ttl)
	if ttl >= shortLived {
		notAfter = notAfter.Add(-backdate)
	}
	if !notAfter.Before(caNotAfter) {
		notAfter = caNotAfter
	}
	if !now.Before(caNotAfter) {
		return time.Time{}, time.Time{}, fmt.Errorf("the CA expired at %s: it signs nothing more", caNotAfter.UTC().Format(time.RFC3339))
	}
	return notBefore, notAfter, nil
}

var keyUsageBits = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// keyUsages turns the API's usages into the certificate's key usage bits
// and its extended key usages (sorted, each once).
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var bits x509.KeyUsage
	var ext []x509.ExtKeyUsage
	var unknown []string
	for _, u := range usages {
		if b, ok := keyUsageBits[u]; ok {
			bits |= b
		} else if e, ok := extKeyUsages[u]; ok {
			ext = append(ext, e)
		} else {
			unknown = append(unknown, string(u))
		}
	}
	if len(unknown) > 0 {
		return 0, nil, fmt.Errorf("%w: unrecognized usage values: %q", errUnsignable, unknown)
	}
	slices.Sort(ext)
	return bits, slices.Compact(ext), nil
}

// template is the certificate issued for req: the request's subject, public
// key and subject alternative names, none of its other extensions, the
// given usages and validity, and never a CA.
func template(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, notBefore, notAfter time.Time) (*x509.Certificate, error) {
	bits, ext, err := keyUsages(usages)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("make a serial number: %w", err)
	}
	return &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)), Subject: req.Subject,
		DNSNames: req.DNSNames, IPAddresses: req.IPAddresses, EmailAddresses: req.EmailAddresses, URIs: req.URIs,
		PublicKeyAlgorithm: req.PublicKeyAlgorithm, PublicKey: req.PublicKey,
		KeyUsage: bits, ExtKeyUsage: ext, BasicConstraintsValid: true, IsCA: false,
		NotBefore: notBefore, NotAfter: notAfter,
	}, nil
}

// issue signs req with the CA at now, for ttl, and returns the certificate
// in PEM.
func (ca CA) issue(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, ttl time.Duration, now time.Time) ([]byte, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: its signature does not verify: %v", errUnsignable, err)
	}
	notBefore, notAfter, err := validity(now, ttl, ca.Cert.NotAfter)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(req, usages, notBefore, notAfter)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign the certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
