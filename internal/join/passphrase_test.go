package join

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"orch/internal/pki"
)

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPassphraseTrustOnFirstUse: with a passphrase for a token, the agent
// takes the server's CA unchecked, warns with its hash, sends the
// passphrase, and from then on trusts only that CA.
func TestPassphraseTrustOnFirstUse(t *testing.T) {
	f := newFakeServer(t)
	dir := t.TempDir()
	cfg := f.config(t, dir)
	cfg.Token = "correct-horse"
	var logs syncBuffer
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := Join(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	hash := pki.CAHash(f.bundle.CACertPEM)
	if want := "use the full token K10" + hash + "::node:<passphrase> to pin it"; !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("logs %q do not warn %q", logs.String(), want)
	}
	var sent bool
	for _, r := range f.recorded() {
		if r.path == CertificatesPath {
			req := &http.Request{Header: r.header}
			user, secret, ok := req.BasicAuth()
			sent = ok && user == TokenUser && secret == "correct-horse"
		}
	}
	if !sent {
		t.Error("the passphrase was not sent as the node user's password")
	}
	stored, err := os.ReadFile(filepath.Join(dir, "agent", "tls", CACertFile))
	if err != nil || !bytes.Equal(stored, f.bundle.CACertPEM) {
		t.Fatalf("stored CA: %v", err)
	}

	// A restart uses the stored certificates, and warns no more.
	before, logged := len(f.recorded()), logs.String()
	if _, err := Join(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := len(f.recorded()) - before; n != 0 || strings.Contains(strings.TrimPrefix(logs.String(), logged), "pin it") {
		t.Errorf("a restart sent %d requests or warned again", n)
	}

	// Another server (another CA) at the same address is refused, even
	// with the certificates gone: the first CA is pinned.
	other := newFakeServer(t)
	os.Remove(filepath.Join(dir, "agent", "tls", ClientCertFile))
	cfg.Server = other.URL
	_, err = Join(context.Background(), cfg)
	if !errors.Is(err, ErrCAHashMismatch) || !strings.Contains(err.Error(), "trusted on first use") {
		t.Fatalf("Join to another CA: %v, want ErrCAHashMismatch naming the pinned CA", err)
	}
	for _, r := range other.recorded() {
		if r.header.Get("Authorization") != "" {
			t.Error("the passphrase reached a server with another CA")
		}
	}
}
