package tunnel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"orch/internal/envtest"
)

// echo is a stand-in kubelet: it sends back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return l.Addr().String()
}

func server(t *testing.T, reg *Registry, node func(*http.Request) (string, bool)) (*httptest.Server, *tls.Config) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(Path, reg.Handler(node))
	srv := httptest.NewUnstartedServer(mux)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, &tls.Config{RootCAs: pool}
}

func roundTrip(t *testing.T, reg *Registry, node, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := reg.Dial(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != msg {
		t.Fatalf("through the tunnel: %q, %v; want %q", got, err, msg)
	}
}

func TestTunnel(t *testing.T) {
	reg := NewRegistry(envtest.Logger())
	srv, tlsConfig := server(t, reg, func(*http.Request) (string, bool) { return "n1", true })
	if _, err := reg.Dial(context.Background(), "n1"); !errors.Is(err, ErrNoTunnel) {
		t.Fatalf("before the agent connects: %v, want ErrNoTunnel", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	a := &Agent{Server: srv.URL, TLS: tlsConfig, Local: echo(t), Log: envtest.Logger(), MaxBackoff: 200 * time.Millisecond}
	go func() { done <- a.Start(ctx) }()
	envtest.EventuallyTrue(t, "the tunnel to open", func() bool { return reg.Has("n1") })
	roundTrip(t, reg, "n1", "hello")
	roundTrip(t, reg, "n1", strings.Repeat("x", 1<<20)) // more than a yamux window

	// The server drops the tunnel: the agent opens it again.
	reg.Drop("n1")
	envtest.EventuallyTrue(t, "the tunnel to open again", func() bool { return reg.Has("n1") })
	roundTrip(t, reg, "n1", "again")

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the tunnel to close when the agent stops", func() bool { return !reg.Has("n1") })
}

func TestTunnelRefused(t *testing.T) {
	reg := NewRegistry(envtest.Logger())
	srv, tlsConfig := server(t, reg, func(*http.Request) (string, bool) { return "", false })
	a := &Agent{Server: srv.URL, TLS: tlsConfig, Local: "127.0.0.1:1", Log: envtest.Logger()}
	if _, err := a.connect(context.Background()); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a refused tunnel: %v, want the server's 403", err)
	}
	// A plain GET is not an upgrade.
	srv2, _ := server(t, reg, func(*http.Request) (string, bool) { return "n1", true })
	resp, err := srv2.Client().Get(srv2.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET without Upgrade: %s, want 400", resp.Status)
	}
}
