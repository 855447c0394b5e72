package cli

import (
	"strings"

	"github.com/urfave/cli/v2"

	"orch/internal/agent"
	"orch/internal/controller/nodelifecycle"
	"orch/internal/kubelet/node"
	"orch/internal/network"
	"orch/internal/pki"
)

func agentCommand() *cli.Command {
	return &cli.Command{
		Name:   "agent",
		Usage:  "run a worker node that joins an orch server and runs its pods",
		Flags:  agentFlags(),
		Before: loadConfigFile,
		Action: runAgent,
		Subcommands: []*cli.Command{{
			Name:  "cleanup",
			Usage: "remove the Service rules, routes, VXLAN device and masquerade rules an agent wrote (run with the agent stopped)",
			Action: func(c *cli.Context) error {
				if err := agent.Cleanup(newLogger(false)); err != nil {
					return cli.Exit("orch agent cleanup: "+err.Error(), 1)
				}
				return nil
			},
		}},
	}
}

func agentFlags() []cli.Flag {
	return append([]cli.Flag{
		configFlag(),
		&cli.StringFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"ORCH_URL"}, Usage: "URL of an orch server, e.g. https://10.0.0.1:6443 (required)"},
		&cli.StringFlag{Name: "token", Aliases: []string{"t"}, EnvVars: []string{"ORCH_TOKEN"}, Usage: "join token: the agent token (the server's data-dir/server/agent-token; " +
			"the server token data-dir/server/token works too), or a passphrase, which trusts the server's CA on first use"},
		&cli.StringFlag{Name: "token-file", EnvVars: []string{"ORCH_TOKEN_FILE"}, Usage: "file holding the join token (used when --token is not given)"},
		&cli.StringFlag{Name: "data-dir", Value: agent.DefaultDataDir, Usage: "where orch keeps its state"},
		&cli.StringSliceFlag{Name: "node-ip", Usage: "IP addresses of this node, repeated or comma-separated (default: the host's first non-loopback IPv4 address)"},
		&cli.BoolFlag{Name: "debug", Usage: "log at debug level"},
	}, nodeFlags()...)
}

// nodeFlags configure the node's agent; `orch server` has them too, for
// the agent it runs.
func nodeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "node-name", Usage: "name of this node (default: the hostname, lowercased)"},
		&cli.StringSliceFlag{Name: "node-label", Usage: "label key=value of this node (repeatable)"},
		&cli.BoolFlag{Name: "autonomous", Usage: "this node runs on its own while cut off from the servers: then it is tainted unreachable (NoSchedule) " +
			"but its pods are not evicted (sets the node label " + nodelifecycle.AutonomousLabel + "=true)"},
		&cli.StringSliceFlag{Name: "node-taint", Usage: "taint key=value:Effect set when the node registers (repeatable; Effect is NoSchedule, PreferNoSchedule or NoExecute)"},
		&cli.StringFlag{Name: "container-runtime-endpoint", Usage: "CRI socket of a running container runtime (default: orch starts and supervises containerd)"},
		&cli.IntFlag{Name: "kubelet-port", Value: agent.DefaultKubeletPort, Usage: "port of the kubelet API (logs, exec, port-forward)"},
		&cli.StringSliceFlag{Name: "eviction-hard", Usage: "hard eviction thresholds signal<quantity or signal<percent% (comma-separated or repeated) " +
			"that set the node's MemoryPressure, DiskPressure and PIDPressure conditions; given, they replace the defaults " +
			"(default: " + node.DefaultEvictionHardFlag + "; pods are not evicted)"},
		&cli.StringFlag{Name: "network-backend", Value: network.BackendVXLAN, Usage: "how pods reach pods on other nodes: vxlan (works across routed networks), " +
			"host-gw (direct routes; nodes must share a link) or none (another network plugin does it)"},
		&cli.BoolFlag{Name: "disable-proxy", Usage: "do not program Services into iptables (another service proxy does it)"},
		&cli.StringFlag{Name: "proxy-mode", Value: "iptables", Usage: "how the Service proxy programs Services: iptables, or nftables (one nft table; needs nft 1.0.1 or later; NodePorts do not answer on 127.0.0.1, as upstream's)"},
		&cli.IntFlag{Name: "ingress-http-port", Value: 80, Usage: "port of the built-in Ingress controller for HTTP on this node (0: none); it listens once the servers have the IngressClass orch (orch server --disable ingress leaves it out)"},
		&cli.IntFlag{Name: "ingress-https-port", Value: 443, Usage: "port of the built-in Ingress controller for HTTPS on this node (0: none)"},
		&cli.BoolFlag{Name: "disable-network-policy", Usage: "do not enforce NetworkPolicies (another network policy controller does it); orch's rules, if any, are removed at start"},
		&cli.StringFlag{Name: "resolv-conf", Value: "/etc/resolv.conf", Usage: "the node's resolver configuration: the cluster DNS forwards other names to its servers, and pods with dnsPolicy Default get it"},
		&cli.BoolFlag{Name: "seccomp-default", Usage: "run containers that name no seccomp profile with the runtime's default profile (RuntimeDefault) instead of none"},
		&cli.StringSliceFlag{Name: "allowed-unsafe-sysctls", Usage: "namespaced sysctls (or patterns ending in *, e.g. kernel.msg*) pods may set beyond the safe ones"},
		&cli.BoolFlag{Name: "protect-kernel-defaults", Usage: "refuse to start when the kernel's tunables (vm.overcommit_memory, kernel.panic, ...) differ from what the kubelet needs, instead of setting them"},
		&cli.StringFlag{Name: "tls-min-version", Value: "VersionTLS12", Usage: "lowest TLS version the apiserver and kubelet ports accept: VersionTLS12 or VersionTLS13"},
		&cli.StringSliceFlag{Name: "tls-cipher-suites", Usage: "TLS 1.2 cipher suites the apiserver and kubelet ports accept, by Go's names (default: the ECDHE AES-GCM and ChaCha20-Poly1305 suites)"},
		&cli.StringFlag{Name: "private-registry", Value: agent.DefaultPrivateRegistry, Usage: "registries.yaml: mirrors, credentials and TLS of image registries " +
			"(k3s's format; read at start; ignored with --container-runtime-endpoint)"},
	}
}

// agentConfig turns the flags into an agent.Config (for `orch server`,
// whose command has no --server or --token, those stay empty).
func agentConfig(c *cli.Context) (agent.Config, error) {
	labels, err := node.ParseLabels(c.StringSlice("node-label"))
	if err != nil {
		return agent.Config{}, err
	}
	if c.Bool("autonomous") {
		labels[nodelifecycle.AutonomousLabel] = "true"
	}
	taints, err := node.ParseTaints(c.StringSlice("node-taint"))
	if err != nil {
		return agent.Config{}, err
	}
	var evictionHard []node.Threshold // nil: the defaults
	if c.IsSet("eviction-hard") {
		if evictionHard, err = node.ParseEvictionHard(c.StringSlice("eviction-hard")); err != nil {
			return agent.Config{}, err
		}
	}
	tlsOptions, err := pki.ParseTLSOptions(c.String("tls-min-version"), splitList(c.StringSlice("tls-cipher-suites")))
	if err != nil {
		return agent.Config{}, err
	}
	return agent.Config{
		TLS:                      tlsOptions,
		SeccompDefault:           c.Bool("seccomp-default"),
		AllowedUnsafeSysctls:     splitList(c.StringSlice("allowed-unsafe-sysctls")),
		ProtectKernelDefaults:    c.Bool("protect-kernel-defaults"),
		Server:                   c.String("server"),
		Token:                    c.String("token"),
		TokenFile:                c.String("token-file"),
		DataDir:                  c.String("data-dir"),
		NodeName:                 c.String("node-name"),
		NodeIPs:                  splitList(c.StringSlice("node-ip")),
		Labels:                   labels,
		Taints:                   taints,
		ContainerRuntimeEndpoint: c.String("container-runtime-endpoint"),
		KubeletPort:              c.Int("kubelet-port"),
		EvictionHard:             evictionHard,
		NetworkBackend:           c.String("network-backend"),
		DisableProxy:             c.Bool("disable-proxy"),
		ProxyMode:                c.String("proxy-mode"),
		DisableNetworkPolicy:     c.Bool("disable-network-policy"),
		IngressHTTPPort:          c.Int("ingress-http-port"),
		IngressHTTPSPort:         c.Int("ingress-https-port"),
		ResolvConf:               c.String("resolv-conf"),
		PrivateRegistry:          c.String("private-registry"),
	}, nil
}

func runAgent(c *cli.Context) error {
	cfg, err := agentConfig(c)
	if err == nil {
		cfg.NotifySystemd = true // orch agent is its own service
		err = agent.Run(c.Context, cfg, newLogger(c.Bool("debug")))
	}
	if err != nil {
		// One "orch agent:" prefix, whoever wrote the message.
		return cli.Exit("orch agent: "+strings.TrimPrefix(err.Error(), "orch agent: "), 1)
	}
	return nil
}
