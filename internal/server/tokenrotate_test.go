package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"orch/internal/envtest"
	"orch/internal/join"
	"orch/internal/jointoken"
	"orch/internal/pki"
)

// noAgent runs a test server without its own agent.
func noAgent(c *Config) { c.DisableAgent = true }

// etcdClient is a client of s's etcd with the etcd client certificate of
// its data dir, as orch token rotate connects.
func etcdClient(t *testing.T, s *testServer) *clientv3.Client {
	t.Helper()
	dir := filepath.Join(s.dataDir, "server", "tls", "etcd")
	tlsConfig, err := transport.TLSInfo{TrustedCAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "client.crt"),
		KeyFile: filepath.Join(dir, "client.key")}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://127.0.0.1:" + strconv.Itoa(s.cfg.EtcdClientPort)},
		TLS: tlsConfig, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// joinStatus is the status s answers to a join request authenticated with
// user and secret: POST of an empty certificates request (400 once the
// secret is accepted, 401 when not) or GET of the server bootstrap.
func joinStatus(t *testing.T, s *testServer, method, path, user, secret string) int {
	t.Helper()
	pool, err := pki.CAPoolFromPEM(s.caPEM)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "kubernetes"}}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, secret)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// certificatesStatus is joinStatus of the node certificates endpoint.
func certificatesStatus(t *testing.T, s *testServer, secret string) int {
	return joinStatus(t, s, http.MethodPost, join.CertificatesPath, join.TokenUser, secret)
}

func secretOf(t *testing.T, token string) string {
	t.Helper()
	_, secret, err := pki.ParseToken(token)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func readToken(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// joinAs joins a new agent named name with token.
func joinAs(ctx context.Context, t *testing.T, s *testServer, name, token string) (*join.Credentials, error) {
	cfg := s.agent(t, name, t.TempDir())
	cfg.Token = token
	return join.Join(ctx, cfg)
}

// TestTokenRotateRealServer: against a real server, the old server token
// joins before a rotation; after it the old one gets 401 (certificates and
// server bootstrap), the new one joins, the agent token is unaffected, an
// agent joined with the old one keeps using its certificates, and the
// bootstrap data in etcd opens with the new token only. Then the agent
// token is rotated to a passphrase the same way.
func TestTokenRotateRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	s := startTestServer(t, noAgent)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	oldServer := s.token
	agentToken := readToken(t, filepath.Join(s.dataDir, "server", "agent-token"))
	before, err := joinAs(ctx, t, s, "joined-before", oldServer)
	if err != nil {
		t.Fatalf("join with the server token before the rotation: %v", err)
	}

	client := etcdClient(t, s)
	server, agent, err := RotateToken(ctx, client, TokenRotation{DataDir: s.dataDir})
	if err != nil {
		t.Fatal(err)
	}
	if server == oldServer || agent != agentToken {
		t.Fatalf("after the rotation: server token %q (old %q), agent token %q (was %q)", server, oldServer, agent, agentToken)
	}
	if got := readToken(t, filepath.Join(s.dataDir, "server", "token")); got != server {
		t.Errorf("token file %q, want the new token %q", got, server)
	}
	envtest.EventuallyTrue(t, "the old server token refused", func() bool {
		return certificatesStatus(t, s, secretOf(t, oldServer)) == http.StatusUnauthorized
	})
	for _, tc := range []struct {
		name, method, path, user, secret string
		want                             int
	}{
		{"old server token: certificates", http.MethodPost, join.CertificatesPath, join.TokenUser, secretOf(t, oldServer), http.StatusUnauthorized},
		{"old server token: server bootstrap", http.MethodGet, join.ServerBootstrapPath, join.ServerUser, secretOf(t, oldServer), http.StatusUnauthorized},
		{"old server token: etcd members", http.MethodPost, join.EtcdMembersPath, join.ServerUser, secretOf(t, oldServer), http.StatusUnauthorized},
		{"new server token: certificates", http.MethodPost, join.CertificatesPath, join.TokenUser, secretOf(t, server), http.StatusBadRequest},
		{"new server token: server bootstrap of a single server", http.MethodGet, join.ServerBootstrapPath, join.ServerUser, secretOf(t, server), http.StatusForbidden},
		{"agent token: certificates", http.MethodPost, join.CertificatesPath, join.TokenUser, secretOf(t, agent), http.StatusBadRequest},
	} {
		if got := joinStatus(t, s, tc.method, tc.path, tc.user, tc.secret); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if _, err := joinAs(ctx, t, s, "old-token", oldServer); !errors.Is(err, join.ErrUnauthorized) {
		t.Errorf("join with the old server token: %v, want ErrUnauthorized", err)
	}
	if _, err := joinAs(ctx, t, s, "new-token", server); err != nil {
		t.Errorf("join with the new server token: %v", err)
	}
	if _, err := joinAs(ctx, t, s, "agent-token", agent); err != nil {
		t.Errorf("join with the agent token after a server token rotation: %v", err)
	}
	getAPI(t, before.RESTConfig()) // its certificates stay valid

	resp, err := client.Get(ctx, bootstrapKey)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("bootstrap data: %v, %d keys", err, len(resp.Kvs))
	}
	if _, err := openBootstrap(secretOf(t, oldServer), resp.Kvs[0].Value); err == nil {
		t.Error("the bootstrap data still opens with the old server token")
	}
	files, err := openBootstrap(secretOf(t, server), resp.Kvs[0].Value)
	if err != nil {
		t.Fatalf("the bootstrap data does not open with the new server token: %v", err)
	}
	if files[agentTokenKey] != agent || files[pki.CAKeyFile] == "" {
		t.Errorf("the bootstrap data holds agent token %q and %d files", files[agentTokenKey], len(files))
	}
	if _, _, err := RotateToken(ctx, client, TokenRotation{DataDir: s.dataDir, NewToken: secretOf(t, oldServer)}); err == nil || !strings.Contains(err.Error(), "rotated away") {
		t.Errorf("rotating back to the old server token: %v, want an error saying it was rotated away", err)
	}

	// The agent token, to a passphrase.
	server2, agent2, err := RotateToken(ctx, client, TokenRotation{DataDir: s.dataDir, Agent: true, NewToken: "new-agent-pass"})
	if err != nil {
		t.Fatal(err)
	}
	if want := pki.FormatAgentToken(pki.CAHash(s.caPEM), "new-agent-pass"); server2 != server || agent2 != want {
		t.Fatalf("after the agent token rotation: server %q (want %q), agent %q (want %q)", server2, server, agent2, want)
	}
	if got := readToken(t, filepath.Join(s.dataDir, "server", "agent-token")); got != agent2 {
		t.Errorf("agent token file %q, want %q", got, agent2)
	}
	envtest.EventuallyTrue(t, "the old agent token refused", func() bool {
		return certificatesStatus(t, s, secretOf(t, agent)) == http.StatusUnauthorized
	})
	if _, err := joinAs(ctx, t, s, "old-agent-token", agent); !errors.Is(err, join.ErrUnauthorized) {
		t.Errorf("join with the old agent token: %v, want ErrUnauthorized", err)
	}
	if _, err := joinAs(ctx, t, s, "new-agent-token", "new-agent-pass"); err != nil {
		t.Errorf("join with the new agent passphrase: %v", err)
	}
	if got := certificatesStatus(t, s, secretOf(t, server)); got != http.StatusBadRequest {
		t.Errorf("the server token after an agent token rotation: %d, want 400", got)
	}
}

// TestTokenRotateRestart: after a rotation, a restart with the old token
// in --token is refused, as is a server that missed the rotation and is
// given the old one; one that missed it without --token adopts the new
// one.
func TestTokenRotateRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	s := startTestServer(t, noAgent)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	old := s.token
	envtest.EventuallyTrue(t, "the server serves", func() bool {
		return certificatesStatus(t, s, secretOf(t, old)) == http.StatusBadRequest
	})
	server, _, err := RotateToken(ctx, etcdClient(t, s), TokenRotation{DataDir: s.dataDir})
	if err != nil {
		t.Fatal(err)
	}
	s.stop()

	given := s.cfg
	given.Token = old
	if err := Run(ctx, given, testLogger()); err == nil || !strings.Contains(err.Error(), "holds another secret") {
		t.Errorf("a start given the old token: %v, want an error saying the token file holds another secret", err)
	}
	tokenPath := filepath.Join(s.dataDir, "server", "token")
	if err := os.WriteFile(tokenPath, []byte(old+"\n"), 0o600); err != nil { // as if it had been stopped during the rotation
		t.Fatal(err)
	}
	if err := Run(ctx, given, testLogger()); !errors.Is(err, pki.ErrInvalidToken) || !strings.Contains(err.Error(), "rotated away") {
		t.Errorf("a start that missed the rotation, given the old token: %v, want an error saying it was rotated away", err)
	}
	again := startTestServer(t, func(c *Config) { *c = s.cfg })
	if again.token != old {
		t.Fatalf("test setup: the token file holds %q", again.token)
	}
	envtest.EventuallyTrue(t, "the restarted server accepts the new server token", func() bool {
		return certificatesStatus(t, again, secretOf(t, server)) == http.StatusBadRequest
	})
	if got := certificatesStatus(t, again, secretOf(t, old)); got != http.StatusUnauthorized {
		t.Errorf("the old server token after the restart: %d, want 401", got)
	}
	if got := readToken(t, tokenPath); got != server {
		t.Errorf("token file after the restart %q, want the cluster's %q", got, server)
	}
}

// TestTokenRotateHA: with two servers, a rotation run on the second makes
// both refuse the old server token and accept the new one at once, and
// the first's token file follows; a server joining later gets the
// cluster's bootstrap with the new token only.
func TestTokenRotateHA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two real servers")
	}
	s1 := startTestServer(t, noAgent, func(c *Config) { c.ClusterInit = true })
	// Every server of a cluster has the same HTTPS port: the second one
	// listens on another loopback address.
	s2 := startTestServer(t, noAgent, func(c *Config) {
		c.JoinServer, c.Token = s1.url, s1.token
		c.BindAddress, c.AdvertiseAddress, c.HTTPSPort = "127.0.0.2", "127.0.0.2", s1.cfg.HTTPSPort
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	old := s1.token
	envtest.EventuallyTrue(t, "the second server accepts the cluster's token", func() bool {
		return certificatesStatus(t, s2, secretOf(t, old)) == http.StatusBadRequest
	})
	// A learner serves no writes: rotate once s2 votes.
	etcd1 := etcdClient(t, s1)
	envtest.EventuallyTrue(t, "the second server to be a voting member", func() bool {
		members, err := etcd1.MemberList(ctx)
		if err != nil || len(members.Members) != 2 {
			return false
		}
		for _, m := range members.Members {
			if m.IsLearner {
				return false
			}
		}
		return true
	})
	server, agent, err := RotateToken(ctx, etcdClient(t, s2), TokenRotation{DataDir: s2.dataDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*testServer{s1, s2} {
		envtest.EventuallyTrue(t, s.url+" refuses the old server token", func() bool {
			return certificatesStatus(t, s, secretOf(t, old)) == http.StatusUnauthorized
		})
		if got := certificatesStatus(t, s, secretOf(t, server)); got != http.StatusBadRequest {
			t.Errorf("%s: the new server token: %d, want 400", s.url, got)
		}
		if got := certificatesStatus(t, s, secretOf(t, agent)); got != http.StatusBadRequest {
			t.Errorf("%s: the agent token: %d, want 400", s.url, got)
		}
		if got := joinStatus(t, s, http.MethodGet, join.ServerBootstrapPath, join.ServerUser, secretOf(t, old)); got != http.StatusUnauthorized {
			t.Errorf("%s: server bootstrap with the old token: %d, want 401", s.url, got)
		}
		envtest.EventuallyTrue(t, s.url+" wrote the new token to its file", func() bool {
			data, err := os.ReadFile(filepath.Join(s.dataDir, "server", "token"))
			return err == nil && strings.TrimSpace(string(data)) == server
		})
	}
	sj, err := join.NewServerJoin(ctx, s1.url, server, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	b, err := sj.Bootstrap(ctx)
	if err != nil {
		t.Fatalf("server bootstrap with the new token: %v", err)
	}
	if b.AgentToken != agent {
		t.Errorf("the bootstrap's agent token %q, want %q", b.AgentToken, agent)
	}
	// The record both servers follow says the same.
	resp, err := etcdClient(t, s1).Get(ctx, jointoken.Key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("join tokens record: %v", err)
	}
	caKey, err := os.ReadFile(filepath.Join(s1.dataDir, "server", "tls", pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := jointoken.OpenRecord(caKey, resp.Kvs[0].Value); err != nil || r.Server != server || r.Agent != agent {
		t.Errorf("the record holds %+v, %v", r, err)
	}
}
