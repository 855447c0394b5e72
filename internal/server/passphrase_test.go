package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orch/internal/join"
	"orch/internal/pki"
)

// TestPassphraseServerAndAgent: a first server given a passphrase as
// --token makes it the server token's secret (the file holds the full
// form); an agent given the same passphrase joins, trusting the CA on
// first use; another passphrase is refused.
func TestPassphraseServerAndAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server")
	}
	s := startTestServer(t, func(c *Config) { c.Token = "correct-horse-battery" })
	if want := pki.FormatToken(pki.CAHash(s.caPEM), "correct-horse-battery"); s.token != want {
		t.Fatalf("token file %q, want %q", s.token, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := s.agent(t, "agent-p", t.TempDir())
	cfg.Token = "correct-horse-battery"
	creds, err := join.Join(ctx, cfg)
	if err != nil {
		t.Fatalf("Join with the passphrase: %v", err)
	}
	if string(creds.CAPEM) != string(s.caPEM) {
		t.Error("the agent trusts another CA than the server's")
	}
	getAPI(t, creds.RESTConfig())

	wrong := s.agent(t, "agent-q", t.TempDir())
	wrong.Token = "wrong-horse"
	if _, err := join.Join(ctx, wrong); !errors.Is(err, join.ErrUnauthorized) {
		t.Errorf("Join with another passphrase: %v, want ErrUnauthorized", err)
	}
}

// TestServerJoinWithPassphrase: a joining server given a passphrase trusts
// the CA on first use and gets the cluster's files; the token it keeps is
// the full form.
func TestServerJoinWithPassphrase(t *testing.T) {
	rs := startRecordingServer(t)
	rs.handler.servers = &clusterServers{tlsDir: rs.bundle.Dir, settings: join.ServerSettings{HTTPSPort: 6443}}
	sj, err := join.NewServerJoin(context.Background(), rs.URL, "the-secret", testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if want := pki.FormatToken(pki.CAHash(rs.bundle.CACertPEM), "the-secret"); sj.Token() != want {
		t.Errorf("Token() = %q, want %q", sj.Token(), want)
	}
	b, err := sj.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b.Files[pki.CACertFile] != string(rs.bundle.CACertPEM) {
		t.Error("the bootstrap's CA is not the server's")
	}
	other, err := join.NewServerJoin(context.Background(), rs.URL, "other", testLogger()) // the CA comes without a secret
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Bootstrap(context.Background()); !errors.Is(err, join.ErrUnauthorized) {
		t.Errorf("Bootstrap with another passphrase: %v, want ErrUnauthorized", err)
	}
}

// TestWriteSharedFilesPassphrase: the token file gets the full form of a
// passphrase, with the hash of the cluster's CA.
func TestWriteSharedFilesPassphrase(t *testing.T) {
	p := parsed{Config: Config{DataDir: t.TempDir()}}
	if err := os.MkdirAll(p.serverDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{pki.CACertFile: "the CA", agentTokenKey: pki.FormatAgentToken(pki.CAHash([]byte("the CA")), "agents")}
	if err := p.writeSharedFiles(files, "a-passphrase"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p.tokenPath())
	if want := pki.FormatToken(pki.CAHash([]byte("the CA")), "a-passphrase"); strings.TrimSpace(string(data)) != want {
		t.Errorf("token file %q, want %q", data, want)
	}
	data, _ = os.ReadFile(filepath.Join(p.serverDir(), "agent-token"))
	if strings.TrimSpace(string(data)) != files[agentTokenKey] {
		t.Errorf("agent-token file %q, want the snapshot's", data)
	}
}
