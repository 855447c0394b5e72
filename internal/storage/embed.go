package storage

import (
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// EtcdConfig says where the embedded etcd keeps its data and listens.
type EtcdConfig struct {
	// Dir is the data directory (data-dir/server/db/etcd).
	Dir string
	// ClientURL and PeerURL are the listen addresses; loopback unless HA.
	ClientURL string
	PeerURL   string
	// Name is the member name.
	Name string
	// UnsafeNoFsync skips fsync; for tests only.
	UnsafeNoFsync bool
	// ExtraClientURLs are more client listen addresses (HA: the node's IP).
	ExtraClientURLs []string
	// ClientTLS and PeerTLS secure https URLs; both verify the other
	// side's certificate against their TrustedCAFile.
	ClientTLS, PeerTLS transport.TLSInfo
	// InitialCluster is name=peerURL,…; empty means this member alone.
	InitialCluster string
	// JoinExisting starts a member that was added to a running cluster
	// (only read when Dir holds no data yet).
	JoinExisting bool
}

// EmbeddedEtcd is a running etcd member inside this process.
type EmbeddedEtcd struct {
	etcd   *embed.Etcd
	Client *clientv3.Client
}

// StartEtcd starts an embedded etcd member and waits until it serves.
func StartEtcd(cfg EtcdConfig) (*EmbeddedEtcd, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd data directory %q: %w", cfg.Dir, err)
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.Dir
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	ec.Logger = "zap"
	ec.LogLevel = "error"
	ec.LogOutputs = []string{"stderr"}
	ec.MaxRequestBytes = 2 * 1024 * 1024
	ec.QuotaBackendBytes = 2 * 1024 * 1024 * 1024
	ec.SnapshotCount = 10000
	clientURL, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd client URL %q: %w", cfg.ClientURL, err)
	}
	peerURL, err := url.Parse(cfg.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd peer URL %q: %w", cfg.PeerURL, err)
	}
	ec.ListenClientUrls = []url.URL{*clientURL}
	for _, extra := range cfg.ExtraClientURLs {
		u, err := url.Parse(extra)
		if err != nil {
			return nil, fmt.Errorf("etcd client URL %q: %w", extra, err)
		}
		ec.ListenClientUrls = append(ec.ListenClientUrls, *u)
	}
	ec.AdvertiseClientUrls = ec.ListenClientUrls[len(ec.ListenClientUrls)-1:]
	ec.ClientTLSInfo, ec.PeerTLSInfo = cfg.ClientTLS, cfg.PeerTLS
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.ListenMetricsUrls = nil
	ec.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, cfg.PeerURL)
	if cfg.InitialCluster != "" {
		ec.InitialCluster = cfg.InitialCluster
	}
	if cfg.JoinExisting {
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %q (is another orch server running?): %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(readyTimeout(cfg)):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %q did not become ready in %s (with other servers: is a quorum of them running and reachable on their peer port?)", cfg.Dir, readyTimeout(cfg))
	}
	return &EmbeddedEtcd{etcd: e, Client: v3client.New(e.Server)}, nil
}

// Err reports fatal errors of the running member.
func (e *EmbeddedEtcd) Err() <-chan error { return e.etcd.Err() }

// Close stops the member.
func (e *EmbeddedEtcd) Close() {
	e.Client.Close()
	e.etcd.Close()
}

// readyTimeout is how long a start waits for the member to serve: a member
// of several (one listening beyond loopback) waits for a quorum of the
// others, which may take a while after a power cut.
func readyTimeout(cfg EtcdConfig) time.Duration {
	if cfg.InitialCluster != "" || len(cfg.ExtraClientURLs) > 0 {
		return 10 * time.Minute
	}
	return 60 * time.Second
}

// Server is the running member, for cluster operations (members, status).
func (e *EmbeddedEtcd) Server() *etcdserver.EtcdServer { return e.etcd.Server }
