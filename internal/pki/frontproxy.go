package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"
)

// The front proxy's PKI, in data-dir/server/tls/front-proxy: the
// request-header CA aggregated API servers trust (through the
// extension-apiserver-authentication ConfigMap) to say which user a request
// proxied by the apiserver comes from, and the client certificate the
// apiserver presents to them. Its CA is not the cluster CA: a certificate
// the cluster CA signed must never pass for the proxy. Servers of one
// cluster share it, as they share the etcd CA.
const (
	FrontProxyClientCertFile = "client.crt"
	FrontProxyClientKeyFile  = "client.key"
	// FrontProxyClientName is the client certificate's common name, the
	// one name extension servers allow (requestheader-allowed-names).
	FrontProxyClientName = "front-proxy-client"
)

// FrontProxy is the front proxy's CA certificate and client certificate.
type FrontProxy struct {
	CACertPEM []byte
	Client    tls.Certificate
}

// EnsureFrontProxy creates or loads the front proxy CA in dir and keeps its
// client certificate valid.
func EnsureFrontProxy(dir string) (FrontProxy, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return FrontProxy{}, fmt.Errorf("create front proxy certificate directory %q: %w (check the permissions of --data-dir)", dir, err)
	}
	b := &Bundle{Dir: dir, now: time.Now}
	if err := b.ensureCA(); err != nil {
		return FrontProxy{}, fmt.Errorf("front proxy CA: %w", err)
	}
	spec := leafSpec{certFile: FrontProxyClientCertFile, keyFile: FrontProxyClientKeyFile, cn: FrontProxyClientName, usage: x509.ExtKeyUsageClientAuth}
	_, certPEM, keyPEM, err := b.ensureLeaf(spec)
	if err != nil {
		return FrontProxy{}, fmt.Errorf("front proxy client certificate: %w", err)
	}
	client, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return FrontProxy{}, err
	}
	return FrontProxy{CACertPEM: b.CACertPEM, Client: client}, nil
}
