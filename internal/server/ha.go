package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"orch/internal/join"
	"orch/internal/pki"
	"orch/internal/storage"
)

// A server is one of several (HA) when started with --cluster-init or
// --server, or when it was before: its etcd member then has a name of its
// own (memberNameFile) and listens on the node's address with TLS. parse
// decides it once.
func (p parsed) ha() bool { return p.several }

func (c Config) startedAsOneOfSeveral() bool {
	if c.ClusterInit || c.JoinServer != "" {
		return true
	}
	_, err := os.Stat(c.memberNameFile())
	return err == nil
}

func (c Config) memberNameFile() string { return filepath.Join(c.serverDir(), "db", "name") }
func (c Config) etcdTLSDir() string     { return filepath.Join(c.tlsDir(), "etcd") }

// frontProxyTLSDir holds the front proxy's CA and client certificate
// (pki.EnsureFrontProxy).
func (c Config) frontProxyTLSDir() string { return filepath.Join(c.tlsDir(), "front-proxy") }

// hasEtcdData reports whether etcd was started here before.
func (c Config) hasEtcdData() bool {
	_, err := os.Stat(filepath.Join(c.etcdDir(), "member"))
	return err == nil
}

// nodeName is the server's Node name, as its agent will register it.
func (p parsed) nodeName() string {
	name := p.Agent.NodeName
	if name == "" {
		name, _ = os.Hostname()
	}
	return strings.ToLower(name)
}

// memberName is the etcd member's name, NODE-<random>, made once.
func (p parsed) memberName() (string, error) {
	if data, err := os.ReadFile(p.memberNameFile()); err == nil {
		return strings.TrimSpace(string(data)), nil
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	name := p.nodeName() + "-" + hex.EncodeToString(suffix)
	if err := os.MkdirAll(filepath.Dir(p.memberNameFile()), 0o700); err != nil {
		return "", err
	}
	return name, os.WriteFile(p.memberNameFile(), []byte(name+"\n"), 0o600)
}

// memberNode is the node a member name NODE-<8 hex> belongs to.
func memberNode(member string) string {
	i := strings.LastIndexByte(member, '-')
	if i < 0 || len(member)-i != 9 {
		return ""
	}
	return member[:i]
}

func (p parsed) settings() join.ServerSettings {
	return join.ServerSettings{ClusterCIDR: cidrList(p.clusterCIDRs), ServiceCIDR: cidrList(p.serviceCIDRs),
		ClusterDNS: p.ClusterDNS, ClusterDomain: p.ClusterDomain, HTTPSPort: p.HTTPSPort}
}

// joinToken is --token, or the content of --token-file.
func (p parsed) joinToken() (string, error) {
	if p.Token != "" {
		return strings.TrimSpace(p.Token), nil
	}
	if p.TokenFile != "" {
		data, err := os.ReadFile(p.TokenFile)
		if err != nil {
			return "", fmt.Errorf("orch server: --token-file: %w", err)
		}
		return strings.TrimSpace(string(data)), nil
	}
	return "", errors.New("orch server: --server needs --token or --token-file (the first server's data-dir/server/token)")
}

// fetchSharedFiles is the first part of joining a cluster: the cluster's
// CA, service account key and etcd CA, checked against the token, and its
// settings, which must be this server's. It writes them, and the token,
// where pki.Ensure and pki.EnsureToken find them.
func (p parsed) fetchSharedFiles(ctx context.Context, log *slog.Logger) (*join.ServerJoin, error) {
	token, err := p.joinToken()
	if err != nil {
		return nil, err
	}
	log.Info("joining the cluster of another server", "server", p.JoinServer)
	sj, err := join.NewServerJoin(ctx, p.JoinServer, token, log)
	if err != nil {
		return nil, err
	}
	b, err := sj.Bootstrap(ctx)
	if err != nil {
		return nil, err
	}
	if msg := p.settings().Mismatch(b.Settings); msg != "" {
		return nil, errors.New("orch server: cannot join " + p.JoinServer + ": " + msg)
	}
	for _, name := range sharedFiles {
		if _, ok := b.Files[name]; !ok && !strings.HasPrefix(name, "front-proxy"+string(filepath.Separator)) { // a server of several has them all
			return nil, fmt.Errorf("orch server: the cluster's bootstrap data lacks %s (is %s an orch server of the same version?)", name, p.JoinServer)
		}
	}
	if b.Files[pki.CACertFile] != string(sj.CAPEM()) {
		return nil, fmt.Errorf("orch server: the cluster's bootstrap data holds another CA than the one %s serves; is it an orch server of the same version?", p.JoinServer)
	}
	token = sj.Token() // the full form, also for a passphrase
	if b.AgentToken != "" {
		if err := p.writeAgentToken(b.AgentToken); err != nil {
			return nil, err
		}
	} else {
		log.Warn("the server joined sent no agent token (a server of an older version?): this server makes its own, and agents that join it need that one",
			"file", p.agentTokenPath())
	}
	return sj, p.writeSharedFiles(b.Files, token)
}

// etcdConfig is how this server's member starts. Its client and peer
// ports speak only TLS and want a client certificate of the etcd CA
// (data-dir/server/tls/etcd, see pki.EnsureEtcd), which no node or user
// certificate is: a process of the host without those files cannot reach
// the data. A single server's member listens on loopback only; a member
// of several on the advertise address too.
func (p parsed) etcdConfig() (storage.EtcdConfig, error) {
	files, err := pki.EnsureEtcd(p.etcdTLSDir(), p.etcdIPs())
	if err != nil {
		return storage.EtcdConfig{}, err
	}
	cfg := storage.EtcdConfig{Dir: p.etcdDir(), Name: "orch", UnsafeNoFsync: p.UnsafeNoFsync,
		ClientURL: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.EtcdClientPort)),
		PeerURL:   "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.EtcdPeerPort)),
		ClientTLS: transport.TLSInfo{CertFile: files.ServerCert, KeyFile: files.ServerKey, TrustedCAFile: files.CACert, ClientCertAuth: true},
		PeerTLS:   transport.TLSInfo{CertFile: files.PeerCert, KeyFile: files.PeerKey, TrustedCAFile: files.CACert, ClientCertAuth: true},
	}
	if !p.ha() {
		return cfg, nil
	}
	name, err := p.memberName()
	if err != nil {
		return cfg, fmt.Errorf("orch server: etcd member name: %w", err)
	}
	host := p.advertise.String()
	cfg.Name = name
	cfg.ExtraClientURLs = []string{"https://" + net.JoinHostPort(host, strconv.Itoa(p.EtcdClientPort))}
	cfg.PeerURL = "https://" + net.JoinHostPort(host, strconv.Itoa(p.EtcdPeerPort))
	return cfg, nil
}

// etcdIPs are the addresses etcd's server and peer certificates name
// besides loopback: the advertise address for a member of several.
func (p parsed) etcdIPs() []net.IP {
	if p.ha() {
		return []net.IP{p.advertise}
	}
	return nil
}

// samePeer reports whether a member's peer URLs are exactly want.
func samePeer(have []string, want string) bool {
	if len(have) != 1 {
		return false
	}
	a, errA := url.Parse(have[0])
	b, errB := url.Parse(want)
	return errA == nil && errB == nil && a.Scheme == b.Scheme && a.Host == b.Host
}
