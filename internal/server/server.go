package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"orch/internal/agent"
	"orch/internal/apiserver"
	"orch/internal/apiserver/authz"
	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/registry/all"
	"orch/internal/etcdsnapshot"
	"orch/internal/join"
	"orch/internal/jointoken"
	"orch/internal/manifests"
	"orch/internal/memory"
	"orch/internal/pki"
	"orch/internal/rbacpolicy"
	"orch/internal/run"
	"orch/internal/sdnotify"
	"orch/internal/storage"
	"orch/internal/tunnel"
	"orch/internal/version"
	builtin "orch/manifests"
)

// Run starts the server and blocks until ctx ends or a component fails.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	start := time.Now()
	p, err := cfg.parse()
	if err != nil {
		return err
	}
	if p.advertise.IsLoopback() {
		log.Warn("the server advertises a loopback address: default/kubernetes gets no endpoints (pods cannot reach the apiserver) "+
			"and no other node can join; pass --node-ip / --advertise-address with the host's address", "address", p.advertise.String())
	}
	if p.ClusterReset {
		return p.clusterReset(ctx, log)
	}
	var serverJoin *join.ServerJoin
	if p.JoinServer != "" && !p.hasEtcdData() {
		if serverJoin, err = p.fetchSharedFiles(ctx, log); err != nil {
			return err
		}
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", p.HTTPSPort)
	certs := &certRenewer{p: p, url: url, now: time.Now, log: log.With("component", "certificates")}
	bundle, err := certs.ensureCertificates()
	if err != nil {
		return err
	}
	token, agentToken, err := p.ensureTokens(bundle.CACertPEM)
	if err != nil {
		return err
	}
	etcdCfg, err := p.etcdConfig()
	if err != nil {
		return err
	}
	if serverJoin != nil {
		if etcdCfg.InitialCluster, err = serverJoin.AddEtcdMember(ctx, etcdCfg.Name, etcdCfg.PeerURL); err != nil {
			return err
		}
		etcdCfg.JoinExisting = true
		log.Info("starting etcd as a new member of the cluster", "member", etcdCfg.Name, "cluster", etcdCfg.InitialCluster)
	}
	if _, err := fs.Stat(builtin.Defaults, "gateway.yaml"); p.GatewayAPI && err != nil {
		return errors.New("orch server: --gateway-api: this orch binary carries no Gateway API definitions (built without `make generate`; build it with `make build`)")
	}
	if err := manifests.WriteDefaults(builtin.Defaults, p.manifestDir(), p.disabledManifests()); err != nil {
		return err
	}
	var etcdClient *clientv3.Client // set once etcd serves
	snapshots, err := etcdsnapshot.NewScheduler(etcdsnapshot.SchedulerConfig{Spec: p.SnapshotCron, Retention: p.SnapshotRetention,
		Dir: p.snapshotDir(), NodeName: p.nodeName(), Client: func() *clientv3.Client { return etcdClient }, Log: log.With("component", "etcd-snapshots")})
	if err != nil {
		return err
	}
	own, err := newOwnSecret()
	if err != nil {
		return err
	}
	ownAgent := run.Func(func(ctx context.Context) error {
		token := pki.FormatAgentToken(pki.CAHash(bundle.CACertPEM), own)
		return agent.Run(ctx, p.agentConfig(url, token), log.With("component", "agent"))
	})
	etcd, early, err := etcdStart{start: func() (*storage.EmbeddedEtcd, error) { return storage.StartEtcd(etcdCfg) },
		agent: p.earlyAgent(ownAgent), agentAfter: offlineAgentAfter, retryAfter: etcdRetryAfter, log: log}.run(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while etcd was starting
		}
		return err
	}
	defer etcd.Close()
	if early != nil {
		defer early.Stop() // when Run fails before its group runs the agent
	}
	etcdClient = etcd.Client
	tokens, err := p.syncTokens(ctx, etcd.Client, bundle.CAKeyPEM, jointoken.Record{Server: token, Agent: agentToken}, log.With("component", "join-tokens"))
	if err != nil {
		return err
	}
	tokenHolder, err := jointoken.NewHolder(tokens)
	if err != nil {
		return err
	}
	store := storage.NewEtcd(etcd.Client)
	encryption, encryptionFollower, err := p.setUpEncryption(ctx, etcd.Client, bundle.CAKeyPEM, log)
	if err != nil {
		return err
	}

	kubeletClient, err := kubeletClientConfig(bundle)
	if err != nil {
		return err
	}
	agentTunnels := tunnels{reg: tunnel.NewRegistry(log.With("component", "tunnels"))}
	kubeletClient.Tunnel = agentTunnels.dial
	loopback, err := loopbackConfig(p, bundle)
	if err != nil {
		return err
	}
	ids := identities{loopback: loopback, bundle: bundle}
	manifestsConfig, err := ids.config(rbacpolicy.ManifestsUser)
	if err != nil {
		return err
	}
	boot := newBootstrap(p, loopback, log.With("component", "bootstrap"))
	frontProxy, err := pki.EnsureFrontProxy(p.frontProxyTLSDir())
	if err != nil {
		return err
	}
	api, err := apiserver.New(apiserver.Config{
		Aggregation: &apiserver.AggregationConfig{ClientCAPEM: bundle.CACertPEM, RequestHeaderCAPEM: frontProxy.CACertPEM, ProxyClient: frontProxy.Client},
		Storage:     store, Resources: all.Resources(), ServiceCIDRs: p.serviceCIDRs, Version: version.Info(), KubeletClient: kubeletClient,
		Log: log.With("component", "apiserver"), ServiceAccountKey: bundle.ServiceAccountKey,
		NodeRegistrationSecret: func(node string) (string, string) { return join.PasswordSecretNamespace, join.PasswordSecretName(node) },
		ClusterDomain:          p.ClusterDomain, ExternalAddress: net.JoinHostPort(p.advertise.String(), strconv.Itoa(p.HTTPSPort)),
		Checks: addHookChecks(map[string]func(context.Context) error{"etcd": func(ctx context.Context) error {
			_, err := store.CurrentRevision(ctx)
			return err
		}}, boot.hooks()...),
		ReadyChecks:            map[string]func(context.Context) error{"etcd-voter": etcdVoterCheck(etcd.Server())},
		EnableAdmissionPlugins: p.EnableAdmissionPlugins, DisableAdmissionPlugins: p.DisableAdmissionPlugins,
		PodSecurityConfigFile: p.PodSecurityConfigFile, Encryption: transformerFor(encryption),
		ServiceAccountMaxTokenExpiration: p.ServiceAccountMaxTokenExpiration, NoExtendedTokenExpiration: p.NoExtendedTokenExpiration,
		Profiling: p.Profiling,
	})
	if err != nil {
		return err
	}
	// The policy is in force once the controller manager may hold its lease
	// (a Role and RoleBinding, reconciled last) and any authenticated user,
	// a joining node among them, may read discovery (a ClusterRole and
	// ClusterRoleBinding: other watch caches, which may lag).
	probes := []authz.Attributes{
		{User: authz.User{Name: rbacpolicy.ControllerManagerUser}, Verb: "update", ResourceRequest: true,
			APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: metav1.NamespaceSystem, Name: rbacpolicy.ControllerManagerLease},
		{User: authz.User{Name: "system:node:probe", Groups: []string{"system:nodes", "system:authenticated"}}, Verb: "get", Path: "/api"},
	}
	boot.policyLoaded = func() bool {
		for _, probe := range probes {
			if d, _, _ := api.Authorizer().Authorize(ctx, probe); d != authz.Allow {
				return false
			}
		}
		return true
	}
	listener, err := listen(p, p.Agent.TLS, bundle, certs.getCertificate)
	if err != nil {
		return err
	}
	joins, err := newJoinHandler(bundle, tokenHolder, own, join.Cluster{DNS: p.ClusterDNS, Domain: p.ClusterDomain, ClusterCIDR: cidrList(p.clusterCIDRs), ServiceCIDR: cidrList(p.serviceCIDRs)}, loopback, log.With("component", "join"))
	if err != nil {
		return err
	}
	joins.policyReady = boot.policyReady
	if p.ha() {
		joins.servers = &clusterServers{etcd: etcd.Client, tlsDir: p.tlsDir(), settings: p.settings()}
	}
	auditor, err := filters.NewAuditor(p.Audit)
	if err != nil {
		return err
	}
	defer auditor.Close()
	if (p.Audit.PolicyFile == "") != (p.Audit.Path == "") {
		log.Warn("the audit log is off: it needs both --audit-policy-file and --audit-log-path")
	}
	handler := filters.Recover(log, agentTunnels.wrap(filters.Timeout(p.RequestTimeout, joins.wrap(filters.Authenticate(api, api, filters.AuditFailures(auditor), filters.Audit(auditor, filters.MaxInFlight(p.Limits, api)))))))
	httpServer := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go func() {
		ready := waitReady(ctx, url, bundle)
		if ready == nil {
			log.Info("orch server is ready", "took", time.Since(start).Round(time.Millisecond).String(),
				"kubeconfig", p.WriteKubeconfig, "try", "orch kubectl get namespaces", "join-token-file", p.tokenPath(), "agent-token-file", p.agentTokenPath())
			if _, err := sdnotify.Ready(); err != nil {
				log.Warn("cannot tell systemd that orch is ready", "err", err)
			}
			if _, err := memory.ShedExecutablePages(); err != nil {
				log.Debug("cannot give back start-up pages of the executable", "err", err)
			}
		}
	}()
	components := []run.Named{
		{Name: "etcd", Runnable: run.Func(func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return nil
			case err := <-etcd.Err():
				return err
			}
		})},
		{Name: "etcd-snapshots", Runnable: run.Func(snapshots.Run)},
		{Name: "join-tokens", Runnable: keyFollower{store: etcd.Client, key: jointoken.Key, what: "join tokens", log: log.With("component", "join-tokens"),
			apply: (&tokenWatcher{caKeyPEM: bundle.CAKeyPEM, holder: tokenHolder, files: p.tokenFiles(), given: p.tokensGiven(), log: log.With("component", "join-tokens")}).apply}},
		{Name: "etcd-compactor", Runnable: run.Func(func(ctx context.Context) error {
			return store.RunCompactor(ctx, 5*time.Minute, log.With("component", "compactor"))
		})},
		{Name: "watch-cache", Runnable: api},
		{Name: "https", Runnable: run.Func(func(ctx context.Context) error {
			// Requests end with the server, so open watches do not hold up shutdown.
			httpServer.BaseContext = func(net.Listener) context.Context { return ctx }
			return serve(ctx, httpServer, listener)
		})},
		{Name: "bootstrap", Runnable: boot},
		{Name: "manifests", Runnable: boot.afterPolicy(&manifests.Applier{Dir: p.manifestDir(), Config: manifestsConfig, Log: log.With("component", "manifests")})},
		{Name: "certificates", Runnable: run.Func(func(ctx context.Context) error {
			client, err := kubernetes.NewForConfig(loopback)
			if err != nil {
				return err
			}
			certs.client = client
			return certs.Start(ctx)
		})},
		{Name: "controller-manager", Runnable: boot.afterPolicy(&controllerManager{ids: ids, log: log.With("component", "controller-manager"), build: controllers(p)})},
	}
	if encryptionFollower != nil {
		components = append(components, run.Named{Name: "secrets-encryption", Runnable: encryptionFollower})
	}
	if p.ha() {
		components = append(components, run.Named{Name: "etcd-members", Runnable: &etcdMembers{
			etcd: etcd.Client, self: uint64(etcd.Server().MemberID()), peerURL: etcdCfg.PeerURL, rest: loopback, log: log.With("component", "etcd-members")}})
	}
	switch {
	case early != nil: // running already, not held for the policy: the node ran before, so the policy is in etcd
		components = append(components, run.Named{Name: "agent", Runnable: early})
	case !p.DisableAgent:
		components = append(components, run.Named{Name: "agent", Runnable: boot.afterPolicy(ownAgent)})
	}
	return run.Group(ctx, log, components...)
}

// listen opens the apiserver's port with the TLS versions and suites opts
// allow; getCertificate gives the serving certificate of each handshake.
func listen(p parsed, opts pki.TLSOptions, bundle *pki.Bundle, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (net.Listener, error) {
	addr := net.JoinHostPort(p.BindAddress, strconv.Itoa(p.HTTPSPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (is another orch server or kube-apiserver running? choose another --https-listen-port): %w", addr, err)
	}
	c := &tls.Config{
		GetCertificate: getCertificate,
		ClientAuth:     tls.VerifyClientCertIfGiven,
		ClientCAs:      bundle.CAPool(),
		NextProtos:     []string{"h2", "http/1.1"},
	}
	opts.Apply(c)
	return tls.NewListener(l, c), nil
}

func serve(ctx context.Context, srv *http.Server, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		srv.Close()
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// loopbackConfig is the client-go config in-process components use: the
// apiserver over 127.0.0.1 with a client certificate of its own.
func loopbackConfig(p parsed, bundle *pki.Bundle) (*rest.Config, error) {
	// In memory only, and as long-lived as the CA: it never needs renewing
	// while the server runs.
	cert, key, err := bundle.IssueClientCert("system:apiserver", []string{"system:masters"}, pki.CAValidity)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", p.HTTPSPort),
		TLSClientConfig: rest.TLSClientConfig{CAData: bundle.CACertPEM, CertData: cert, KeyData: key},
		QPS:             200, Burst: 400, UserAgent: "orch-server/" + version.Version,
	}, nil
}

// waitReady polls /readyz until it answers ok.
func waitReady(ctx context.Context, url string, bundle *pki.Bundle) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: bundle.CAPool()}}}
	defer client.CloseIdleConnections()
	for {
		resp, err := client.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
