// Package agent is the composition root of `orch agent`: it joins the node
// to a server (internal/join), gets a container runtime (the one at
// --container-runtime-endpoint, or containerd supervised as a child with the
// built-in and air-gap images imported), connects to it over CRI and runs the
// kubelet's parts (kubelet.go): the node component (internal/kubelet/node)
// that registers the Node and keeps its Lease and status fresh, the pod
// network's CNI config (internal/network) once the server has given the
// node a podCIDR, and the pod workers (internal/kubelet/pods) that run the
// node's pods. Every API client goes through the local store
// (internal/localstore), so all of it also runs while the server cannot be
// reached. The components run in a run.Group: started in order, stopped in
// reverse.
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/join"
	"orch/internal/kubelet/containerd"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/metrics"
	"orch/internal/kubelet/node"
	"orch/internal/kubelet/pods"
	"orch/internal/localstore"
	"orch/internal/network"
	"orch/internal/pki"
	"orch/internal/proxy"
	"orch/internal/run"
	"orch/internal/sdnotify"
	"orch/internal/tunnel"
)

// DefaultDataDir is the data dir whose containerd uses containerd.DefaultState.
const DefaultDataDir = "/var/lib/orch"

// Config is what `orch agent` was asked to do.
type Config struct {
	Server    string // URL of an orch server, e.g. https://10.0.0.1:6443
	Token     string // join token; read from TokenFile when empty
	TokenFile string
	DataDir   string
	NodeName  string // the hostname, lowercased, when empty
	// NodeIPs are IP addresses; the host's first non-loopback IPv4 address when empty.
	NodeIPs []string
	Labels  map[string]string
	Taints  []corev1.Taint
	// ContainerRuntimeEndpoint is an existing CRI socket; empty means start containerd.
	ContainerRuntimeEndpoint string
	// KubeletPort is the port of the kubelet API (DefaultKubeletPort when 0).
	KubeletPort int
	// EvictionHard are the thresholds of the node's pressure conditions
	// (--eviction-hard): node.DefaultEvictionHard when nil, none when empty.
	EvictionHard []node.Threshold
	// NetworkBackend routes pods between nodes: network.BackendVXLAN
	// (the default), BackendHostGW or BackendNone.
	NetworkBackend string
	// DisableProxy leaves Services to another proxy (--disable-proxy).
	DisableProxy bool
	// ProxyMode is the Service proxy's mode, proxy.ModeIPTables (when
	// empty) or proxy.ModeNFTables (--proxy-mode).
	ProxyMode string
	// DisableNetworkPolicy leaves NetworkPolicies to another enforcer
	// (--disable-network-policy); the agent then removes rules of its own
	// an earlier run left.
	DisableNetworkPolicy bool
	// IngressHTTPPort and IngressHTTPSPort are where the built-in Ingress
	// controller listens (--ingress-http-port, --ingress-https-port), once
	// the servers have its IngressClass; 0 or less: that port is not
	// served.
	IngressHTTPPort, IngressHTTPSPort int
	// NotifySystemd tells systemd the agent is ready once it has joined
	// (a server's own agent leaves that to the server).
	NotifySystemd bool
	// ResolvConf is the node's resolver configuration: the cluster DNS
	// forwards other names to its servers, and pods with dnsPolicy
	// Default get it (default /etc/resolv.conf).
	ResolvConf string
	// PrivateRegistry is a registries.yaml (mirrors, credentials, TLS of
	// registries; --private-registry, DefaultPrivateRegistry when empty)
	// that orch's containerd follows. Nothing when the file does not exist.
	PrivateRegistry string
	// SeccompDefault runs containers that name no seccomp profile with
	// the runtime's default one (--seccomp-default), as the kubelet's flag.
	SeccompDefault bool
	// AllowedUnsafeSysctls are the sysctls (or patterns ending in *)
	// beyond the safe ones that pods may set (--allowed-unsafe-sysctls).
	AllowedUnsafeSysctls []string
	// ProtectKernelDefaults refuses to start when the kernel's tunables
	// differ from what the kubelet needs, instead of setting them
	// (--protect-kernel-defaults).
	ProtectKernelDefaults bool
	// TLS are the versions and suites the kubelet API accepts
	// (--tls-min-version, --tls-cipher-suites); zero is the defaults.
	TLS pki.TLSOptions
}

// DefaultPrivateRegistry is where the registries configuration is read.
const DefaultPrivateRegistry = "/etc/orch/registries.yaml"

// DefaultKubeletPort is the kubelet API's port, as upstream's.
const DefaultKubeletPort = 10250

// checked is Config with defaults filled in.
type checked struct {
	Config
	ips []net.IP
}

func (cfg Config) check() (checked, error) {
	c := checked{Config: cfg}
	if cfg.Server == "" {
		return c, errors.New("orch agent: --server is required (the URL of an orch server, e.g. https://10.0.0.1:6443)")
	}
	if c.Token == "" && c.TokenFile != "" {
		data, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return c, fmt.Errorf("orch agent: --token-file: %w", err)
		}
		c.Token = strings.TrimSpace(string(data))
	}
	c.Token = strings.TrimSpace(c.Token)
	if c.Token == "" {
		return c, fmt.Errorf("orch agent: --token or --token-file is required (the agent token in %s/server/agent-token on the server)", DefaultDataDir)
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = DefaultKubeletPort
	}
	if c.NetworkBackend == "" {
		c.NetworkBackend = network.BackendVXLAN
	}
	switch c.NetworkBackend {
	case network.BackendVXLAN, network.BackendHostGW, network.BackendNone:
	default:
		return c, fmt.Errorf("orch agent: --network-backend %q is not one of vxlan, host-gw or none", c.NetworkBackend)
	}
	switch c.ProxyMode {
	case "", proxy.ModeIPTables, proxy.ModeNFTables:
	default:
		return c, fmt.Errorf("orch agent: --proxy-mode %q is not one of iptables or nftables", c.ProxyMode)
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"--ingress-http-port", c.IngressHTTPPort}, {"--ingress-https-port", c.IngressHTTPSPort}} {
		if p.port < 0 || p.port > 65535 {
			return c, fmt.Errorf("orch agent: %s %d is not a port number (0 turns it off)", p.flag, p.port)
		}
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.PrivateRegistry == "" {
		c.PrivateRegistry = DefaultPrivateRegistry
	}
	if c.KubeletPort < 0 || c.KubeletPort > 65535 {
		return c, fmt.Errorf("orch agent: --kubelet-port %d is not a port number", c.KubeletPort)
	}
	if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	if c.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("orch agent: no --node-name given and the hostname is unknown: %w", err)
		}
		c.NodeName = host
	}
	c.NodeName = strings.ToLower(c.NodeName)
	for _, s := range cfg.NodeIPs {
		ip := net.ParseIP(s)
		if ip == nil {
			return c, fmt.Errorf("orch agent: --node-ip %q is not an IP address", s)
		}
		c.ips = append(c.ips, ip)
	}
	if len(c.ips) == 0 {
		c.ips = []net.IP{network.HostIP()}
	}
	return c, nil
}

// ContainerdState is where the supervised containerd of the agent with
// dataDir keeps its runtime state and socket: containerd.DefaultState for
// the default data dir, else a directory named after the data dir's path,
// so agents with different data dirs on one machine never share a
// containerd, and the socket path stays short (unix sockets: < 108 bytes).
func ContainerdState(dataDir string) string {
	if filepath.Clean(dataDir) == DefaultDataDir {
		return containerd.DefaultState
	}
	sum := sha256.Sum256([]byte(filepath.Clean(dataDir)))
	return filepath.Join(filepath.Dir(containerd.DefaultState), "containerd-"+hex.EncodeToString(sum[:6]))
}

// Run runs the agent until ctx ends (then it returns nil) or a component
// fails. Joining comes first: a token the server refuses ends Run at once
// with an error; an unreachable server is retried until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	c, err := cfg.check()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.DataDir, "agent"), 0o700); err != nil {
		return fmt.Errorf("orch agent: data dir: %w", err)
	}
	if err := ensureKernelTunables("/proc/sys", c.ProtectKernelDefaults, log.With("component", "kubelet")); err != nil {
		return err
	}
	joinCfg := join.Config{Server: c.Server, Token: c.Token, NodeName: c.NodeName, NodeIPs: c.ips, DataDir: c.DataDir, Log: log}
	log.Info("joining the cluster", "server", c.Server, "node", c.NodeName, "ips", c.ips)
	creds, err := join.Join(ctx, joinCfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while the server was away
		}
		return err
	}
	if cfg.NotifySystemd {
		if _, err := sdnotify.Ready(); err != nil {
			log.Warn("cannot tell systemd that the agent is ready", "err", err)
		}
	}
	// The node's clients go through its local store, which keeps what
	// the node needs and answers for the server while it is away.
	store, err := localstore.Open(filepath.Join(c.DataDir, "agent"), localstore.Options{Log: log.With("component", "local-store")})
	if err != nil {
		return fmt.Errorf("orch agent: %w", err)
	}
	defer store.Close()
	creds.Through(store.Config)
	renewer, err := join.NewRenewer(joinCfg, creds)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(creds.RESTConfig())
	if err != nil {
		return fmt.Errorf("orch agent: client for the server: %w", err)
	}
	nodeCfg := node.Config{Name: c.NodeName, NodeIPs: c.ips, Labels: c.Labels, Taints: c.Taints, DataDir: c.DataDir, KubeletPort: c.KubeletPort,
		EvictionHard: c.EvictionHard}

	// The tunnel lets the server reach the kubelet API when it cannot
	// dial the node (NAT, a firewall).
	agentTunnel := &tunnel.Agent{Server: creds.Server, TLS: creds.ClientTLSConfig(), Dial: creds.Servers().DialContext,
		Local: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.KubeletPort)), Log: log.With("component", "tunnel")}
	components := []run.Named{{Name: "node certificates", Runnable: renewer}, {Name: "tunnel", Runnable: agentTunnel},
		{Name: "servers", Runnable: run.Func(func(ctx context.Context) error { return creds.Servers().FollowServers(ctx, client) })}}
	endpoint := c.ContainerRuntimeEndpoint
	ready := func(ctx context.Context) error { return nil } // the runtime is up
	keep := func() []string { return nil }                  // images GC spares
	var views pods.ImageViews                               // image volumes: the own containerd only
	if endpoint == "" {
		ccfg := containerd.NewConfig(c.DataDir).WithState(ContainerdState(c.DataDir))
		nodeCfg.ImageFsDir = ccfg.Root // else the runtime's image file system
		if err := containerd.ApplyRegistries(ccfg.CertsDir, c.PrivateRegistry, log); err != nil {
			return fmt.Errorf("orch agent: %w", err)
		}
		sup := containerd.NewSupervisor(ccfg, log)
		store, err := containerd.NewStore(ccfg.Address)
		if err != nil {
			return err
		}
		defer store.Close()
		imp := containerd.NewImporter(store, ccfg.ImagesDir, ccfg.ImportState, containerd.Builtins(), log)
		keep, views = imp.Images, store
		components = append(components,
			run.Named{Name: "containerd", Runnable: sup},
			run.Named{Name: "image import", Runnable: imp})
		endpoint = sup.Endpoint()
		ready = func(ctx context.Context) error {
			select {
			case <-sup.Ready():
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	components = append(components, run.Named{Name: "kubelet", Runnable: run.Func(func(ctx context.Context) error {
		if err := ready(ctx); err != nil {
			return nil // stopped before the runtime came up
		}
		km := metrics.New(c.NodeName)
		rt, err := cri.Connect(ctx, endpoint, cri.WithInterceptor(km.RuntimeInterceptor()))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("container runtime at %s: %w", endpoint, err)
		}
		defer rt.Close()
		v := rt.RuntimeVersion()
		log.Info("container runtime connected", "endpoint", endpoint, "runtime", v.RuntimeName+"://"+v.RuntimeVersion)
		parts, err := kubelet(c, nodeCfg, creds, client, rt, km, keep, views, log)
		if err != nil {
			return err
		}
		return run.Group(ctx, log, parts...)
	})})
	return run.Group(ctx, log, components...)
}

// cniConfig is where the pod network's conflist goes: the conf dir of the
// containerd orch supervises (a runtime given by --container-runtime-endpoint
// must be pointed at the same directory), with host-local's address records
// under the data dir, so agents sharing a file system never share them.
func cniConfig(c checked) network.CNIConfig {
	return network.CNIConfig{
		NodeName: c.NodeName,
		ConfDir:  containerd.NewConfig(c.DataDir).CNIConfDir,
		Bridge: network.BridgeOptions{IPAMDataDir: filepath.Join(c.DataDir, "agent", "cni", "networks"),
			MTU: network.PodMTU(c.ips[0], c.NetworkBackend)},
	}
}
