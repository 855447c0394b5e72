package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The files of the embedded etcd's own PKI, in data-dir/server/tls/etcd.
// Its CA is not the cluster CA: a node's client certificate must never open
// etcd. Servers of one cluster share the etcd CA (it travels with the
// cluster CA when a server joins) and each has its own leaf certificates.
const (
	EtcdServerCertFile = "server.crt"
	EtcdServerKeyFile  = "server.key"
	EtcdPeerCertFile   = "peer.crt"
	EtcdPeerKeyFile    = "peer.key"
	EtcdClientCertFile = "client.crt"
	EtcdClientKeyFile  = "client.key"
)

// EtcdFiles are the paths of the etcd PKI's files.
type EtcdFiles struct {
	Dir                                      string
	CACert, ServerCert, ServerKey            string
	PeerCert, PeerKey, ClientCert, ClientKey string
}

// EtcdFilesIn names the files of the etcd PKI in dir.
func EtcdFilesIn(dir string) EtcdFiles {
	p := func(name string) string { return filepath.Join(dir, name) }
	return EtcdFiles{Dir: dir, CACert: p(CACertFile),
		ServerCert: p(EtcdServerCertFile), ServerKey: p(EtcdServerKeyFile),
		PeerCert: p(EtcdPeerCertFile), PeerKey: p(EtcdPeerKeyFile),
		ClientCert: p(EtcdClientCertFile), ClientKey: p(EtcdClientKeyFile)}
}

// EnsureEtcd creates or loads the etcd CA in dir and keeps its server,
// peer and client certificates valid for ips (and loopback).
func EnsureEtcd(dir string, ips []net.IP) (EtcdFiles, error) {
	files := EtcdFilesIn(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return files, fmt.Errorf("create etcd certificate directory %q: %w (check the permissions of --data-dir)", dir, err)
	}
	b := &Bundle{Dir: dir, now: time.Now}
	if err := b.ensureCA(); err != nil {
		return files, fmt.Errorf("etcd CA: %w", err)
	}
	all := append([]net.IP{net.IPv4(127, 0, 0, 1)}, ips...)
	leaves := []leafSpec{
		{certFile: EtcdServerCertFile, keyFile: EtcdServerKeyFile, cn: "etcd-server", usage: x509.ExtKeyUsageServerAuth, bothWays: true,
			dnsNames: []string{"localhost"}, ips: all},
		{certFile: EtcdPeerCertFile, keyFile: EtcdPeerKeyFile, cn: "etcd-peer", usage: x509.ExtKeyUsageServerAuth, bothWays: true,
			dnsNames: []string{"localhost"}, ips: all},
		{certFile: EtcdClientCertFile, keyFile: EtcdClientKeyFile, cn: "etcd-client", usage: x509.ExtKeyUsageClientAuth},
	}
	for _, spec := range leaves {
		if _, _, _, err := b.ensureLeaf(spec); err != nil {
			return files, fmt.Errorf("etcd certificate %s: %w", spec.certFile, err)
		}
	}
	return files, nil
}
