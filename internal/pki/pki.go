// Package pki keeps the certificates and the join token of an orch server.
//
// Ensure creates, on first start, a self-signed cluster CA (ECDSA P-256, ten
// years) in a directory (the server passes data-dir/server/tls) and, signed by
// it, a serving certificate for the apiserver and an admin client certificate
// (CN system:admin, O system:masters). On later starts it loads the same CA and
// reuses the leaf certificates unless they no longer fit: a wanted SAN is
// missing, they expire within RenewBefore, or they were not signed by the CA.
//
// EnsureServerToken keeps the server token K10<sha256 of ca.crt>::server:<secret>
// and EnsureAgentToken the agent token K10<…>::node:<secret>; ParseJoinToken
// (which also takes a bare passphrase) and VerifyCAHash let an agent check
// the server's CA against a token before it sends anything. WriteKubeconfig
// writes an admin kubeconfig.
//
// Ensure also keeps the service account token signing key (an RSA 2048 key,
// created once and never replaced, as upstream's sa.key).
//
// Only the standard library's crypto is used; certificate keys are ECDSA
// P-256; keys are written with mode 0600, certificates with 0644, every file
// atomically.
package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names inside Config.Dir.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "serving.crt"
	ServingKeyFile  = "serving.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
)

// Lifetimes of what Ensure creates.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 365 * 24 * time.Hour
	// RenewBefore is how long before expiry a leaf certificate is replaced.
	RenewBefore = 90 * 24 * time.Hour
)

// The identity of the admin client certificate.
const (
	AdminUser  = "system:admin"
	AdminGroup = "system:masters"
)

// Defaults used when Config leaves a field empty.
const (
	DefaultClusterDomain = "cluster.local"
	DefaultServiceCIDR   = "10.43.0.0/16"
)

// Config says where the certificates live and what the serving certificate
// must cover.
type Config struct {
	// Dir holds the CA, serving and admin files; it is created with mode 0700.
	Dir string
	// Hostname is put in the serving certificate; empty means os.Hostname().
	Hostname string
	// NodeIPs are the addresses the apiserver is reached at.
	NodeIPs []net.IP
	// ExtraSANs are --tls-san values: each an IP address or a DNS name.
	ExtraSANs []string
	// ServiceCIDR gives the first service IP (the kubernetes Service);
	// nil means DefaultServiceCIDR.
	ServiceCIDR *net.IPNet
	// ClusterDomain names kubernetes.default.svc.<domain>; empty means
	// DefaultClusterDomain.
	ClusterDomain string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Bundle is the material Ensure created or loaded. The PEM fields are the
// exact bytes of the files in Dir.
type Bundle struct {
	Dir string

	CACertPEM, CAKeyPEM           []byte
	ServingCertPEM, ServingKeyPEM []byte
	AdminCertPEM, AdminKeyPEM     []byte
	// ServiceAccountKeyPEM is the service account token signing key
	// (ServiceAccountKeyFile), ServiceAccountKey the parsed key.
	ServiceAccountKeyPEM []byte
	ServiceAccountKey    crypto.Signer

	// CA, Serving and Admin are the parsed certificates.
	CA, Serving, Admin *x509.Certificate

	caKey crypto.Signer
	now   func() time.Time
}

// Ensure creates or loads the CA, the serving certificate and the admin
// certificate in cfg.Dir, replacing leaf certificates that no longer fit.
func Ensure(cfg Config) (*Bundle, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("pki: no certificate directory given (the server passes data-dir/server/tls)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create certificate directory %q: %w (check the permissions of --data-dir)", cfg.Dir, err)
	}
	sans, err := wantedSANs(cfg)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Dir: cfg.Dir, now: cfg.Now}
	if err := b.ensureCA(); err != nil {
		return nil, err
	}

	serving := leafSpec{
		certFile: ServingCertFile, keyFile: ServingKeyFile,
		cn: "kube-apiserver", usage: x509.ExtKeyUsageServerAuth,
		dnsNames: sans.dnsNames, ips: sans.ips,
	}
	b.Serving, b.ServingCertPEM, b.ServingKeyPEM, err = b.ensureLeaf(serving)
	if err != nil {
		return nil, err
	}

	admin := leafSpec{
		certFile: AdminCertFile, keyFile: AdminKeyFile,
		cn: AdminUser, orgs: []string{AdminGroup}, usage: x509.ExtKeyUsageClientAuth,
	}
	b.Admin, b.AdminCertPEM, b.AdminKeyPEM, err = b.ensureLeaf(admin)
	if err != nil {
		return nil, err
	}
	if err := b.ensureServiceAccountKey(); err != nil {
		return nil, err
	}
	return b, nil
}

// Path returns the path of one of the files in the bundle's directory, e.g.
// b.Path(CACertFile).
func (b *Bundle) Path(name string) string { return filepath.Join(b.Dir, name) }

// ServingCertificate returns the serving certificate and key for a tls.Config.
func (b *Bundle) ServingCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(b.ServingCertPEM, b.ServingKeyPEM)
}

// CAPool returns a pool holding the cluster CA, to verify clients or servers.
func (b *Bundle) CAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(b.CA)
	return pool
}
