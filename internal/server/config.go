// Package server is the composition root of `orch server`: it starts the
// embedded etcd, the apiserver on HTTPS and the bootstrap of default objects,
// and stops them in reverse order.
package server

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"orch/internal/agent"
	"orch/internal/apiserver/filters"
	"orch/internal/cidr"
	"orch/internal/network"
)

// Config is everything `orch server` is told by flags and the config file.
type Config struct {
	DataDir             string
	WriteKubeconfig     string
	WriteKubeconfigMode os.FileMode
	HTTPSPort           int
	BindAddress         string
	AdvertiseAddress    string
	NodeIPs             []string
	TLSSANs             []string
	ClusterCIDR         string
	ServiceCIDR         string
	ClusterDNS          string
	ClusterDomain       string
	// DisableAgent runs the control plane only; otherwise the server runs
	// an agent on its own node, configured by the Agent* fields.
	DisableAgent bool
	// Agent is the server's own agent as `orch agent` flags would give
	// it (node name, labels, taints, runtime endpoint, kubelet port); the
	// server fills in the rest (see agentConfig).
	Agent agent.Config
	// EtcdClientPort and EtcdPeerPort listen on loopback (2379 and 2380).
	EtcdClientPort int
	EtcdPeerPort   int
	// ClusterInit starts a cluster other servers can join (--cluster-init).
	ClusterInit bool
	// JoinServer is the URL of a server whose cluster this one joins
	// (--server), with its join Token or TokenFile.
	JoinServer, Token, TokenFile string
	// AgentToken or AgentTokenFile set the agent token, which joins agents
	// only (--agent-token, --agent-token-file); when neither is given it is
	// generated at the first start (see tokens.go).
	AgentToken, AgentTokenFile string
	// ClusterReset with RestorePath replaces the etcd data with a
	// snapshot and exits (--cluster-reset --cluster-reset-restore-path).
	ClusterReset bool
	RestorePath  string
	// SnapshotCron, SnapshotRetention and SnapshotDir schedule etcd
	// snapshots (--etcd-snapshot-*); an empty SnapshotCron disables them.
	SnapshotCron      string
	SnapshotRetention int
	SnapshotDir       string
	// Disable leaves out the built-in manifests of these names (file names
	// without extension, e.g. local-storage); see internal/manifests.
	Disable []string
	// DefaultLocalStoragePath is where the built-in local-path provisioner
	// puts volumes on their node (--default-local-storage-path; empty:
	// data-dir/storage), unless their StorageClass's path parameter says.
	DefaultLocalStoragePath string
	// GatewayAPI deploys the built-in manifest "gateway" (Gateway API's
	// definitions and the GatewayClass orch), which is off by default:
	// the definitions cost the server about 40 MB while no one uses them.
	GatewayAPI bool
	// Limits are --max-requests-inflight and
	// --max-mutating-requests-inflight (zero: no limit); RequestTimeout is
	// --request-timeout (zero: none).
	Limits         filters.Limits
	RequestTimeout time.Duration
	// Profiling serves /debug/pprof/ on the API port (--profiling).
	Profiling bool
	// Audit is the audit log (--audit-*); off without a policy and a path.
	Audit filters.AuditConfig
	// ServiceAccountMaxTokenExpiration and NoExtendedTokenExpiration are
	// the apiserver's (--service-account-max-token-expiration,
	// --service-account-extend-token-expiration=false).
	ServiceAccountMaxTokenExpiration time.Duration
	NoExtendedTokenExpiration        bool
	// SecretsEncryption makes the cluster encrypt Secrets at rest with a
	// managed key (--secrets-encryption) of SecretsEncryptionProvider
	// (aescbc or secretbox; default aescbc); EncryptionProviderConfig is
	// instead an upstream EncryptionConfiguration file the user keeps
	// (--encryption-provider-config).
	SecretsEncryption         bool
	SecretsEncryptionProvider string
	EncryptionProviderConfig  string
	// EncryptionProviderConfigAutomaticReload reads that file again when
	// it changes (--encryption-provider-config-automatic-reload).
	EncryptionProviderConfigAutomaticReload bool
	// EnableAdmissionPlugins and DisableAdmissionPlugins change which
	// admission plugins run; PodSecurityConfigFile holds PodSecurity's
	// defaults and exemptions (see apiserver.AdmissionPlugins and
	// apiserver.LoadPodSecurityConfig).
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	PodSecurityConfigFile                           string
	// UnsafeNoFsync skips etcd fsyncs; for tests only.
	UnsafeNoFsync bool
}

// agentConfig is the server's own agent: it joins through loopback url
// with token. Its Node's control-plane role labels come from the server
// (bootstrap.go), since NodeRestriction forbids a kubelet to set them.
func (p parsed) agentConfig(url, token string) agent.Config {
	a := p.Agent
	a.Server, a.Token, a.TokenFile, a.DataDir, a.NodeIPs = url, token, "", p.DataDir, p.Config.NodeIPs
	return a
}

// roleLabels are the labels a server's own Node carries.
var roleLabels = map[string]string{"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/master": "true"}

// paths under the data directory.
func (c Config) serverDir() string   { return filepath.Join(c.DataDir, "server") }
func (c Config) etcdDir() string     { return filepath.Join(c.serverDir(), "db", "etcd") }
func (c Config) tlsDir() string      { return filepath.Join(c.serverDir(), "tls") }
func (c Config) tokenPath() string   { return filepath.Join(c.serverDir(), "token") }
func (c Config) manifestDir() string { return filepath.Join(c.serverDir(), "manifests") }

// localStoragePath is --default-local-storage-path, or data-dir/storage.
func (c Config) localStoragePath() string {
	if c.DefaultLocalStoragePath != "" {
		return c.DefaultLocalStoragePath
	}
	return filepath.Join(c.DataDir, "storage")
}

// disabledManifests are the built-in manifests not to deploy: those of
// --disable, and "gateway" unless --gateway-api.
func (c Config) disabledManifests() []string {
	if c.GatewayAPI {
		return c.Disable
	}
	return append(slices.Clip(c.Disable), "gateway")
}

// parsed is Config with addresses and networks parsed and checked.
type parsed struct {
	Config
	// serviceCIDRs and clusterCIDRs are --service-cidr and --cluster-cidr:
	// one network, or an IPv4 and an IPv6 one (dual stack), the first the
	// primary; serviceCIDR and clusterCIDR are the primaries.
	serviceCIDRs, clusterCIDRs []*net.IPNet
	serviceCIDR, clusterCIDR   *net.IPNet
	nodeIPs                    []net.IP
	advertise                  net.IP
	several                    bool // one of several servers (see ha)
}

func (c Config) parse() (parsed, error) {
	p := parsed{Config: c, several: c.startedAsOneOfSeveral()}
	var err error
	if p.serviceCIDRs, err = cidr.ParseNets("--service-cidr", c.ServiceCIDR); err != nil {
		return p, err
	}
	if p.clusterCIDRs, err = cidr.ParseNets("--cluster-cidr", c.ClusterCIDR); err != nil {
		return p, err
	}
	if (len(p.serviceCIDRs) == 2) != (len(p.clusterCIDRs) == 2) || p.serviceCIDRs[0].IP.To4() == nil != (p.clusterCIDRs[0].IP.To4() == nil) {
		return p, fmt.Errorf("--service-cidr %s and --cluster-cidr %s must have the same families, in the same order", c.ServiceCIDR, c.ClusterCIDR)
	}
	p.serviceCIDR, p.clusterCIDR = p.serviceCIDRs[0], p.clusterCIDRs[0]
	if ip := net.ParseIP(c.ClusterDNS); ip == nil || !p.serviceCIDR.Contains(ip) {
		return p, fmt.Errorf("--cluster-dns %q must be an IP inside --service-cidr %s", c.ClusterDNS, c.ServiceCIDR)
	}
	for _, s := range c.NodeIPs {
		ip := net.ParseIP(s)
		if ip == nil {
			return p, fmt.Errorf("--node-ip %q is not an IP address", s)
		}
		p.nodeIPs = append(p.nodeIPs, ip)
	}
	if c.BindAddress != "" && net.ParseIP(c.BindAddress) == nil {
		return p, fmt.Errorf("--bind-address %q is not an IP address", c.BindAddress)
	}
	if m := c.ServiceAccountMaxTokenExpiration; m != 0 && (m < time.Hour || m > (1<<32)*time.Second) {
		return p, fmt.Errorf("--service-account-max-token-expiration %s: it must be between 1h and 2^32 seconds", m)
	}
	if c.SecretsEncryption && c.EncryptionProviderConfig != "" {
		return p, fmt.Errorf("--secrets-encryption and --encryption-provider-config exclude each other: give the keys in the file, or let orch manage them")
	}
	if c.HTTPSPort <= 0 || c.HTTPSPort > 65535 {
		return p, fmt.Errorf("--https-listen-port %d is not a port number", c.HTTPSPort)
	}
	if p.advertise, err = chooseAdvertise(c.AdvertiseAddress, p.nodeIPs, network.HostIP); err != nil {
		return p, err
	}
	if len(p.nodeIPs) == 0 {
		p.nodeIPs = []net.IP{p.advertise}
	}
	return p, nil
}

// cidrList is nets as a flag would give them: comma-separated.
func cidrList(nets []*net.IPNet) string {
	s := make([]string, len(nets))
	for i, n := range nets {
		s[i] = n.String()
	}
	return strings.Join(s, ",")
}
