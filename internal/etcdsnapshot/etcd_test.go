package etcdsnapshot_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"orch/internal/envtest"
)

// member is a real embedded etcd member for a test. It is configured the way
// internal/storage.StartEtcd configures the server's (that package is off
// limits here: only the apiserver imports storage).
type member struct {
	etcd      *embed.Etcd
	clientURL string
	once      sync.Once
}

// startEtcd starts a member named name in dir with the given peer URL.
func startEtcd(t *testing.T, dir, name, peerURL string) *member {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir, cfg.UnsafeNoFsync = name, dir, true
	cfg.Logger, cfg.LogLevel = "zap", "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	clientURL := "http://" + envtest.FreeAddr(t)
	cu, _ := url.Parse(clientURL)
	pu, err := url.Parse(peerURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = fmt.Sprintf("%s=%s", name, peerURL)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd in %s: %v", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		t.Fatalf("etcd in %s failed: %v", dir, err)
	case <-time.After(60 * time.Second):
		e.Close()
		t.Fatalf("etcd in %s did not become ready", dir)
	}
	m := &member{etcd: e, clientURL: clientURL}
	t.Cleanup(m.close)
	return m
}

func (m *member) close() { m.once.Do(m.etcd.Close) }

// client is a network client of the member, as `orch etcd-snapshot` uses.
func (m *member) client(t *testing.T) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func put(t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// all returns every key in the member and its value.
func all(t *testing.T, c *clientv3.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}
