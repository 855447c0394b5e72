package server

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"orch/internal/envtest"
	"orch/internal/pki"
	"orch/internal/storage"
)

// TestSingleServerEtcdRequiresClientCertificates: a single server's etcd
// answers on loopback only to clients with the etcd CA's client
// certificate: not to plain HTTP, not to TLS without a certificate, not to
// a certificate of the cluster CA (a node's or a user's); its peer port
// neither. It starts on data an older orch left with plain HTTP URLs.
func TestSingleServerEtcdRequiresClientCertificates(t *testing.T) {
	dir := t.TempDir()
	p := parsed{Config: Config{DataDir: dir, EtcdClientPort: envtest.FreePort(t), EtcdPeerPort: envtest.FreePort(t), UnsafeNoFsync: true}}
	clientAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.EtcdClientPort))
	peerAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.EtcdPeerPort))

	// What an older orch left: a member with plain HTTP URLs, and a key.
	old, err := storage.StartEtcd(storage.EtcdConfig{Dir: p.etcdDir(), Name: "orch", UnsafeNoFsync: true,
		ClientURL: "http://" + clientAddr, PeerURL: "http://" + peerAddr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Client.Put(context.Background(), "/registry/kept", "yes"); err != nil {
		t.Fatal(err)
	}
	old.Close()

	cfg, err := p.etcdConfig()
	if err != nil {
		t.Fatal(err)
	}
	e, err := storage.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("etcd with TLS on the data of an older orch: %v", err)
	}
	defer e.Close()
	if got, err := e.Client.Get(context.Background(), "/registry/kept"); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("the older data: %v %v", got, err)
	}

	files := pki.EtcdFilesIn(p.etcdTLSDir())
	withCert, err := transport.TLSInfo{CertFile: files.ClientCert, KeyFile: files.ClientKey, TrustedCAFile: files.CACert}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	noCert, err := transport.TLSInfo{TrustedCAFile: files.CACert}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "server"})
	if err != nil {
		t.Fatal(err)
	}
	nodeCert, nodeKey, err := cluster.IssueClientCert("system:node:n1", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(nodeCert, nodeKey)
	if err != nil {
		t.Fatal(err)
	}
	clusterCert := noCert.Clone()
	clusterCert.Certificates = []tls.Certificate{pair}

	status := func(endpoint string, tlsConfig *tls.Config) error {
		client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = client.Status(ctx, endpoint)
		return err
	}
	for _, tc := range []struct {
		name     string
		endpoint string
		tls      *tls.Config
		ok       bool
	}{
		{"etcd client certificate", "https://" + clientAddr, withCert, true},
		{"plain HTTP", "http://" + clientAddr, nil, false},
		{"TLS without a certificate", "https://" + clientAddr, noCert, false},
		{"a node's certificate of the cluster CA", "https://" + clientAddr, clusterCert, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := status(tc.endpoint, tc.tls)
			if tc.ok != (err == nil) {
				t.Errorf("Status: %v, want ok=%v", err, tc.ok)
			}
		})
	}
	t.Run("peer port", func(t *testing.T) {
		for name, client := range map[string]*http.Client{
			"plain HTTP":                {Timeout: 3 * time.Second},
			"TLS without a certificate": {Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: noCert}},
		} {
			scheme := "https://"
			if name == "plain HTTP" {
				scheme = "http://"
			}
			resp, err := client.Get(scheme + peerAddr + "/members")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Errorf("%s: the peer port listed the members", name)
				}
			}
			client.CloseIdleConnections()
		}
		peer, err := transport.TLSInfo{CertFile: files.PeerCert, KeyFile: files.PeerKey, TrustedCAFile: files.CACert}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: peer}}
		defer client.CloseIdleConnections()
		resp, err := client.Get("https://" + peerAddr + "/members")
		if err != nil {
			t.Fatalf("the peer certificate: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the peer certificate: %d", resp.StatusCode)
		}
	})
}
