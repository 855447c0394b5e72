package cli

import (
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/klog/v2"

	"orch/internal/apiserver/filters"
	"orch/internal/etcdsnapshot"
	"orch/internal/server"
)

func serverCommand() *cli.Command {
	return &cli.Command{
		Name:   "server",
		Usage:  "run the control plane (embedded etcd, apiserver, scheduler, controllers) and an agent on this machine",
		Flags:  serverFlags(),
		Before: loadConfigFile,
		Action: runServer,
	}
}

func serverFlags() []cli.Flag {
	return append([]cli.Flag{
		configFlag(),
		&cli.StringFlag{Name: "data-dir", Value: "/var/lib/orch", Usage: "where orch keeps its state"},
		&cli.StringFlag{Name: "write-kubeconfig", Value: defaultKubeconfig, Usage: "where to write the admin kubeconfig"},
		&cli.StringFlag{Name: "write-kubeconfig-mode", Value: "0600", Usage: "file mode of the admin kubeconfig (octal)"},
		&cli.IntFlag{Name: "https-listen-port", Value: 6443, Usage: "port of the apiserver"},
		&cli.StringFlag{Name: "bind-address", Value: "0.0.0.0", Usage: "address the apiserver listens on"},
		&cli.StringFlag{Name: "advertise-address", Usage: "address agents and the kubernetes Service use to reach this server (default: --node-ip or the host's address)"},
		&cli.StringSliceFlag{Name: "node-ip", Usage: "IP addresses of this node"},
		&cli.StringSliceFlag{Name: "tls-san", Usage: "extra host names or IPs in the serving certificate"},
		&cli.StringFlag{Name: "cluster-cidr", Value: "10.42.0.0/16", Usage: "pod network"},
		&cli.StringFlag{Name: "service-cidr", Value: "10.43.0.0/16", Usage: "service cluster IP range"},
		&cli.StringFlag{Name: "cluster-dns", Value: "10.43.0.10", Usage: "cluster DNS service IP"},
		&cli.StringFlag{Name: "cluster-domain", Value: "cluster.local", Usage: "cluster DNS domain"},
		&cli.StringSliceFlag{Name: "disable", Usage: "do not deploy this built-in manifest of data-dir/server/manifests (file name without extension: local-storage, ingress); repeated or comma-separated"},
		&cli.StringFlag{Name: "default-local-storage-path", Usage: "where the built-in local-path provisioner (StorageClass local-path) makes volumes on their node (default: data-dir/storage)"},
		&cli.BoolFlag{Name: "gateway-api", Usage: "deploy Gateway API's definitions (GatewayClass, Gateway, HTTPRoute, ReferenceGrant; carried in the binary) and the GatewayClass orch of the built-in Gateway controller (the built-in manifest gateway)"},
		&cli.StringFlag{Name: "etcd-snapshot-schedule-cron", Value: etcdsnapshot.DefaultSchedule, Usage: "when to snapshot etcd (cron: minute hour day-of-month month day-of-week); empty disables"},
		&cli.IntFlag{Name: "etcd-snapshot-retention", Value: etcdsnapshot.DefaultRetention, Usage: "how many scheduled snapshots of this node to keep"},
		&cli.StringFlag{Name: "etcd-snapshot-dir", Usage: "where snapshots go (default: data-dir/server/db/snapshots)"},
		&cli.BoolFlag{Name: "cluster-reset", Usage: "with --cluster-reset-restore-path: replace etcd's data with a snapshot, then exit"},
		&cli.StringFlag{Name: "cluster-reset-restore-path", Usage: "the etcd snapshot --cluster-reset restores (with --token on a new host)"},
		&cli.BoolFlag{Name: "cluster-init", Usage: "start a cluster other servers can join (etcd listens on the advertise address with TLS)"},
		&cli.StringFlag{Name: "server", Aliases: []string{"s"}, Usage: "URL of a server of the cluster this server joins, e.g. https://10.0.0.1:6443 (with --token)"},
		&cli.StringFlag{Name: "token", Aliases: []string{"t"}, EnvVars: []string{"ORCH_TOKEN"}, Usage: "the cluster's server token: with --server, to join the cluster (the first server's data-dir/server/token); " +
			"without, on the first server, a full token or a passphrase that becomes its secret; it joins servers and agents and opens the cluster's keys: keep it for servers; " +
			"change it with orch token rotate"},
		&cli.StringFlag{Name: "token-file", EnvVars: []string{"ORCH_TOKEN_FILE"}, Usage: "file holding the server token (used when --token is not given)"},
		&cli.StringFlag{Name: "agent-token", EnvVars: []string{"ORCH_AGENT_TOKEN"}, Usage: "the agent token, which joins agents only (K10<hash>::node:<secret> or a passphrase); " +
			"given, it replaces the cluster's; default: generated at the first start into data-dir/server/agent-token; rotate it with orch token rotate --agent"},
		&cli.StringFlag{Name: "agent-token-file", EnvVars: []string{"ORCH_AGENT_TOKEN_FILE"}, Usage: "file holding the agent token (used when --agent-token is not given)"},
		&cli.BoolFlag{Name: "disable-agent", Usage: "run the control plane only (no agent, so no pods, on this node)"},
		&cli.IntFlag{Name: "etcd-client-port", Value: 2379, Usage: "loopback port of the embedded etcd's clients"},
		&cli.IntFlag{Name: "etcd-peer-port", Value: 2380, Usage: "loopback port of the embedded etcd's peers"},
		&cli.IntFlag{Name: "max-requests-inflight", Value: 400, Usage: "read requests served at once before the apiserver answers 429 (system:masters, watches and streams are not counted; 0: no limit)"},
		&cli.IntFlag{Name: "max-mutating-requests-inflight", Value: 200, Usage: "write requests served at once before the apiserver answers 429 (0: no limit)"},
		&cli.BoolFlag{Name: "profiling", Value: true, Usage: "serve Go's runtime profiles under /debug/pprof/ on the API port to users allowed that path (cluster-admin), as upstream's apiserver"},
		&cli.DurationFlag{Name: "request-timeout", Value: time.Minute, Usage: "time after which a request that is not a watch or a stream ends with 504 (0: none)"},
		&cli.DurationFlag{Name: "service-account-max-token-expiration", Usage: "the longest a service account token may be asked for (at least 1h; 0: no cap)"},
		&cli.BoolFlag{Name: "service-account-extend-token-expiration", Value: true, Usage: "let the tokens the kubelet projects stay valid for a year, warning after their hour, as upstream"},
		&cli.BoolFlag{Name: "secrets-encryption", Usage: "encrypt Secrets at rest with a key orch makes and keeps in step on every server (see orch secrets-encrypt)"},
		&cli.StringFlag{Name: "secrets-encryption-provider", Value: "aescbc", Usage: "the cipher of --secrets-encryption: aescbc or secretbox"},
		&cli.StringFlag{Name: "encryption-provider-config", Usage: "an EncryptionConfiguration file (apiserver.config.k8s.io/v1, as kube-apiserver's) for other resources or providers, whose keys you keep; read at start"},
		&cli.BoolFlag{Name: "encryption-provider-config-automatic-reload", Usage: "read --encryption-provider-config again whenever it changes (within 5 s), as kube-apiserver's flag"},
		&cli.StringFlag{Name: "audit-policy-file", Usage: "audit policy (audit.k8s.io/v1 Policy, as kube-apiserver's); with --audit-log-path, turns the audit log on"},
		&cli.StringFlag{Name: "audit-log-path", Usage: "where the audit log goes (a file, or - for standard output); with --audit-policy-file"},
		&cli.IntFlag{Name: "audit-log-maxage", Usage: "days to keep rotated audit logs (0: no limit)"},
		&cli.IntFlag{Name: "audit-log-maxbackup", Usage: "rotated audit logs to keep (0: no limit)"},
		&cli.IntFlag{Name: "audit-log-maxsize", Usage: "MB an audit log reaches before it is rotated (0: 100)"},
		&cli.StringSliceFlag{Name: "enable-admission-plugins", Usage: "admission plugins to run besides the defaults, by upstream's names (e.g. AlwaysPullImages)"},
		&cli.StringSliceFlag{Name: "disable-admission-plugins", Usage: "default admission plugins not to run, by upstream's names (e.g. PodSecurity)"},
		&cli.StringFlag{Name: "pod-security-admission-config-file", Usage: "PodSecurity's cluster defaults and exemptions: a PodSecurityConfiguration, or an AdmissionConfiguration holding one and PodTolerationRestriction's configuration (default: privileged, no exemptions)"},
		&cli.BoolFlag{Name: "debug", Usage: "log at debug level"},
	}, nodeFlags()...)
}

func runServer(c *cli.Context) error {
	cfg, err := serverConfig(c)
	if err != nil {
		return err
	}
	return server.Run(c.Context, cfg, newLogger(c.Bool("debug")))
}

// serverConfig turns the flags (and config file) into a server.Config.
func serverConfig(c *cli.Context) (server.Config, error) {
	mode, err := parseMode(c.String("write-kubeconfig-mode"))
	if err != nil {
		return server.Config{}, err
	}
	ownAgent, err := agentConfig(c)
	if err != nil {
		return server.Config{}, err
	}
	return server.Config{
		DataDir:                 c.String("data-dir"),
		WriteKubeconfig:         c.String("write-kubeconfig"),
		WriteKubeconfigMode:     mode,
		HTTPSPort:               c.Int("https-listen-port"),
		BindAddress:             c.String("bind-address"),
		AdvertiseAddress:        c.String("advertise-address"),
		NodeIPs:                 splitList(c.StringSlice("node-ip")),
		TLSSANs:                 splitList(c.StringSlice("tls-san")),
		ClusterCIDR:             c.String("cluster-cidr"),
		ServiceCIDR:             c.String("service-cidr"),
		ClusterDNS:              c.String("cluster-dns"),
		ClusterDomain:           c.String("cluster-domain"),
		DisableAgent:            c.Bool("disable-agent"),
		Agent:                   ownAgent,
		EtcdClientPort:          c.Int("etcd-client-port"),
		EtcdPeerPort:            c.Int("etcd-peer-port"),
		ClusterInit:             c.Bool("cluster-init"),
		ClusterReset:            c.Bool("cluster-reset"),
		RestorePath:             c.String("cluster-reset-restore-path"),
		SnapshotCron:            c.String("etcd-snapshot-schedule-cron"),
		SnapshotRetention:       c.Int("etcd-snapshot-retention"),
		SnapshotDir:             c.String("etcd-snapshot-dir"),
		Disable:                 splitList(c.StringSlice("disable")),
		GatewayAPI:              c.Bool("gateway-api"),
		DefaultLocalStoragePath: c.String("default-local-storage-path"),
		JoinServer:              c.String("server"),
		Token:                   c.String("token"),
		TokenFile:               c.String("token-file"),
		AgentToken:              c.String("agent-token"),
		AgentTokenFile:          c.String("agent-token-file"),
		Limits:                  filters.Limits{ReadOnly: c.Int("max-requests-inflight"), Mutating: c.Int("max-mutating-requests-inflight")},
		RequestTimeout:          c.Duration("request-timeout"),
		Profiling:               c.Bool("profiling"),
		Audit: filters.AuditConfig{PolicyFile: c.String("audit-policy-file"), Path: c.String("audit-log-path"),
			MaxAge: c.Int("audit-log-maxage"), MaxBackup: c.Int("audit-log-maxbackup"), MaxSize: c.Int("audit-log-maxsize")},
		EnableAdmissionPlugins:                  splitList(c.StringSlice("enable-admission-plugins")),
		DisableAdmissionPlugins:                 splitList(c.StringSlice("disable-admission-plugins")),
		PodSecurityConfigFile:                   c.String("pod-security-admission-config-file"),
		SecretsEncryption:                       c.Bool("secrets-encryption"),
		ServiceAccountMaxTokenExpiration:        c.Duration("service-account-max-token-expiration"),
		NoExtendedTokenExpiration:               !c.Bool("service-account-extend-token-expiration"),
		SecretsEncryptionProvider:               c.String("secrets-encryption-provider"),
		EncryptionProviderConfig:                c.String("encryption-provider-config"),
		EncryptionProviderConfigAutomaticReload: c.Bool("encryption-provider-config-automatic-reload"),
	}, nil
}

func newLogger(debug bool) *slog.Logger {
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	klog.SetSlogLogger(log.With("source", "client-go")) // libraries that log with klog join the same stream
	return log
}
