package join

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"orch/internal/envtest"
)

func TestServersFailOverAndRemember(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	down := envtest.FreeAddr(t)
	file := filepath.Join(t.TempDir(), ServersFile)
	s := newServers(down, file, slog.Default())
	s.Set([]string{down, up.Addr().String()})

	conn, err := s.DialContext(context.Background(), "tcp", "ignored:1")
	if err != nil {
		t.Fatalf("dial with one server up: %v", err)
	}
	conn.Close()
	if got := s.Addresses(); got[0] != up.Addr().String() {
		t.Fatalf("after a failover the answering server should come first: %v", got)
	}
	data, err := os.ReadFile(file)
	if err != nil || strings.Fields(string(data))[1] != up.Addr().String() {
		t.Fatalf("servers file %q, %v; want both servers, --server first", data, err)
	}
	again := newServers(down, file, slog.Default())
	if !slices.Contains(again.Addresses(), up.Addr().String()) {
		t.Fatalf("a restarted agent does not remember the learned servers: %v", again.Addresses())
	}
}

func TestServersAllDown(t *testing.T) {
	a, b := envtest.FreeAddr(t), envtest.FreeAddr(t)
	s := newServers(a, filepath.Join(t.TempDir(), ServersFile), slog.Default())
	s.Set([]string{b})
	_, err := s.DialContext(context.Background(), "tcp", "x:1")
	if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Fatalf("err = %v; want one naming both servers", err)
	}
}

func TestServersKeepFirstAndAddPort(t *testing.T) {
	s := newServers("10.0.0.1", filepath.Join(t.TempDir(), ServersFile), slog.Default())
	s.Set([]string{"10.0.0.2:6443"})
	if got, want := s.Addresses(), []string{"10.0.0.1:443", "10.0.0.2:6443"}; !slices.Equal(got, want) {
		t.Fatalf("Addresses() = %v, want %v", got, want)
	}
}

func TestSealOpen(t *testing.T) {
	sealed, err := Seal("secret", []byte("the CA key"))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := Open("secret", sealed); err != nil || string(plain) != "the CA key" {
		t.Fatalf("Open = %q, %v", plain, err)
	}
	if _, err := Open("other", sealed); err == nil {
		t.Fatal("Open with the wrong secret succeeded")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := Open("secret", sealed); err == nil {
		t.Fatal("Open of altered data succeeded")
	}
	if _, err := Open("secret", []byte("short")); err == nil {
		t.Fatal("Open of a too short input succeeded")
	}
}

func TestSettingsMismatch(t *testing.T) {
	mine := ServerSettings{ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local", HTTPSPort: 6443}
	if msg := mine.Mismatch(mine); msg != "" {
		t.Fatalf("equal settings: %q", msg)
	}
	theirs := mine
	theirs.ClusterDomain = "corp.local"
	if msg := mine.Mismatch(theirs); !strings.Contains(msg, "--cluster-domain cluster.local differs from the cluster's corp.local") {
		t.Fatalf("Mismatch = %q", msg)
	}
	theirs = mine
	theirs.HTTPSPort = 7443
	if msg := mine.Mismatch(theirs); !strings.Contains(msg, "--https-listen-port 7443") {
		t.Fatalf("Mismatch = %q", msg)
	}
}
