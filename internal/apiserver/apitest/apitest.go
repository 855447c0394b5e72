// Package apitest starts a real apiserver on a real embedded etcd for tests
// and benchmarks: plain HTTP on loopback, every request authenticated as an
// admin, everything torn down when the test ends.
package apitest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"orch/internal/apiserver"
	"orch/internal/apiserver/filters"
	"orch/internal/apiserver/registry/all"
	"orch/internal/storage"
	"orch/internal/version"
)

// Server is a running test apiserver.
type Server struct {
	URL    string
	Config *rest.Config
	Etcd   *storage.EmbeddedEtcd
	Store  *storage.Etcd
}

// Start runs etcd and the apiserver until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	etcd, err := storage.StartEtcd(storage.EtcdConfig{
		Dir: t.TempDir(), Name: "test", UnsafeNoFsync: true,
		ClientURL: "http://" + freeAddr(t), PeerURL: "http://" + freeAddr(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	store := storage.NewEtcd(etcd.Client)
	_, cidr, _ := net.ParseCIDR("10.43.0.0/16")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("ORCH_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	api, err := apiserver.New(apiserver.Config{Storage: store, Resources: all.Resources(), ServiceCIDR: cidr, Version: version.Info(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); api.Start(ctx) }()
	admin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := filters.WithUser(r.Context(), filters.User{Name: "test-admin", Groups: []string{"system:masters"}})
		api.ServeHTTP(w, r.WithContext(ctx))
	})
	srv := httptest.NewServer(filters.Recover(log, admin))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
	})
	cfg := &rest.Config{Host: srv.URL, QPS: -1, Timeout: 30 * time.Second}
	return &Server{URL: srv.URL, Config: cfg, Etcd: etcd, Store: store}
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
