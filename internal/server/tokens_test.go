package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"orch/internal/join"
	"orch/internal/pki"
)

// joinCall sends body as JSON to the join endpoint path of rs with basic
// auth user and secret, and returns the status code and the answer's
// message.
func joinCall(t *testing.T, rs *recordingServer, method, path, user, secret string, body any) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: rs.bundle.CAPool()}}}
	defer client.CloseIdleConnections()
	data, _ := json.Marshal(body)
	r, _ := http.NewRequest(method, rs.URL+path, strings.NewReader(string(data)))
	r.SetBasicAuth(user, secret)
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status struct{ Message string }
	json.NewDecoder(resp.Body).Decode(&status)
	return resp.StatusCode, status.Message
}

// TestAgentTokenOnlyJoinsAgents: the agent token's secret gets node
// certificates and 401 from every endpoint only servers may use; the
// server token's gets both (a single server then answers 403).
func TestAgentTokenOnlyJoinsAgents(t *testing.T) {
	rs := startRecordingServer(t)
	call := func(method, path, user, secret string, body any) (int, string) {
		t.Helper()
		return joinCall(t, rs, method, path, user, secret, body)
	}
	nodes := []string{join.NodesGroup}
	certs := func(name string) join.CertificatesRequest {
		return join.CertificatesRequest{NodeName: name, NodeIPs: []string{"10.0.0.7"}, NodePassword: "pw-" + name,
			ClientCSR: csrPEM(t, join.NodeUser(name), nodes, nil), ServingCSR: csrPEM(t, join.NodeUser(name), nodes, []string{name}, "10.0.0.7")}
	}
	member := join.EtcdMemberRequest{Name: "s2-0a1b2c3d", PeerURL: "https://10.0.0.2:2380"}
	for _, tc := range []struct {
		name, method, path, user, secret string
		body                             any
		want                             int
		say                              string
	}{
		{"agent token: node certificates", http.MethodPost, join.CertificatesPath, join.TokenUser, "agent-secret", certs("n1"), http.StatusOK, ""},
		{"server token: node certificates", http.MethodPost, join.CertificatesPath, join.TokenUser, "the-secret", certs("n2"), http.StatusOK, ""},
		{"agent token: bootstrap", http.MethodGet, join.ServerBootstrapPath, join.ServerUser, "agent-secret", nil, http.StatusUnauthorized, "agent token only joins agents"},
		{"agent token as node: bootstrap", http.MethodGet, join.ServerBootstrapPath, join.TokenUser, "agent-secret", nil, http.StatusUnauthorized, ""},
		{"agent token: etcd member", http.MethodPost, join.EtcdMembersPath, join.ServerUser, "agent-secret", member, http.StatusUnauthorized, ""},
		{"own agent: etcd member", http.MethodPost, join.EtcdMembersPath, join.ServerUser, "own-secret", member, http.StatusUnauthorized, ""},
		{"server token: bootstrap of a single server", http.MethodGet, join.ServerBootstrapPath, join.ServerUser, "the-secret", nil, http.StatusForbidden, "--cluster-init"},
		{"server token: etcd member of a single server", http.MethodPost, join.EtcdMembersPath, join.ServerUser, "the-secret", member, http.StatusForbidden, "--cluster-init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := call(tc.method, tc.path, tc.user, tc.secret, tc.body)
			if code != tc.want || !strings.Contains(msg, tc.say) {
				t.Errorf("%s %s: %d %q, want %d saying %q", tc.method, tc.path, code, msg, tc.want, tc.say)
			}
		})
	}
}

// TestServerBootstrapCarriesAgentToken: a joining server gets the
// cluster's agent token, sealed with the server token.
func TestServerBootstrapCarriesAgentToken(t *testing.T) {
	rs := startRecordingServer(t)
	rs.handler.servers = &clusterServers{tlsDir: rs.bundle.Dir, settings: join.ServerSettings{HTTPSPort: 6443}}
	token := pki.FormatToken(pki.CAHash(rs.bundle.CACertPEM), "the-secret")
	sj, err := join.NewServerJoin(context.Background(), rs.URL, token, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	b, err := sj.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b.AgentToken != rs.handler.tokens.Load().Agent {
		t.Errorf("bootstrap agent token %q, want %q", b.AgentToken, rs.handler.tokens.Load().Agent)
	}
	if _, ok := b.Files[pki.CAKeyFile]; !ok {
		t.Errorf("bootstrap files %v lack the CA key", b.Files)
	}
	// A server given the agent token stops before asking.
	agent := pki.FormatAgentToken(pki.CAHash(rs.bundle.CACertPEM), "agent-secret")
	seen := func() int {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return len(rs.seen)
	}
	before := seen()
	if _, err := join.NewServerJoin(context.Background(), rs.URL, agent, testLogger()); !errors.Is(err, join.ErrInvalidToken) || !strings.Contains(err.Error(), "agent token") {
		t.Errorf("NewServerJoin with the agent token: %v", err)
	}
	if seen() != before {
		t.Error("a server given the agent token sent requests")
	}
}

func TestEnsureTokens(t *testing.T) {
	caPEM := []byte("ca")
	hash := pki.CAHash(caPEM)
	for _, tc := range []struct {
		name         string
		cfg          func(dir string) Config
		wantAgent    *regexp.Regexp
		wantErr      string
		serverSecret string // written to the token file first
	}{
		{name: "generated", cfg: func(dir string) Config { return Config{DataDir: dir} },
			wantAgent: regexp.MustCompile(`^K10` + hash + `::node:[0-9a-f]{32}$`)},
		{name: "passphrase", cfg: func(dir string) Config { return Config{DataDir: dir, AgentToken: "agents-only"} },
			wantAgent: regexp.MustCompile(`^K10` + hash + `::node:agents-only$`)},
		{name: "from a file", cfg: func(dir string) Config {
			path := filepath.Join(dir, "given")
			os.WriteFile(path, []byte("K10"+hash+"::node:from-file\n"), 0o600)
			return Config{DataDir: dir, AgentTokenFile: path}
		}, wantAgent: regexp.MustCompile(`^K10` + hash + `::node:from-file$`)},
		{name: "missing file", cfg: func(dir string) Config { return Config{DataDir: dir, AgentTokenFile: filepath.Join(dir, "none")} },
			wantErr: "--agent-token-file"},
		{name: "server token", cfg: func(dir string) Config { return Config{DataDir: dir, AgentToken: "K10" + hash + "::server:x"} },
			wantErr: "--agent-token: invalid join token: it is a server token"},
		{name: "the server token's secret", cfg: func(dir string) Config { return Config{DataDir: dir, AgentToken: "same"} },
			serverSecret: "same", wantErr: "the agent token's secret is the server token's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := parsed{Config: tc.cfg(dir)}
			if tc.serverSecret != "" {
				os.MkdirAll(p.serverDir(), 0o700)
				os.WriteFile(p.tokenPath(), []byte(pki.FormatToken(hash, tc.serverSecret)), 0o600)
			}
			server, agent, err := p.ensureTokens(caPEM)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ensureTokens: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.wantAgent.MatchString(agent) || !strings.HasPrefix(server, "K10"+hash+"::server:") {
				t.Errorf("tokens %q and %q", server, agent)
			}
			data, err := os.ReadFile(filepath.Join(dir, "server", "agent-token"))
			if err != nil || strings.TrimSpace(string(data)) != agent {
				t.Errorf("agent-token file %q, %v; want %q", data, err, agent)
			}
			if st, err := os.Stat(filepath.Join(dir, "server", "agent-token")); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("agent-token file mode: %v %v", st.Mode(), err)
			}
		})
	}
}
