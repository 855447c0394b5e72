package secretsencrypt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"

	"orch/internal/envtest"
	"orch/internal/secretsencrypt"
)

// Reencrypt rewrites, in real etcd, every value written with an older key
// or not encrypted, across pages, and leaves current ones and other
// prefixes alone.
func TestReencrypt(t *testing.T) {
	ctx := context.Background()
	client := envtest.Start(t).Etcd.Client
	dir := t.TempDir()
	first, err := secretsencrypt.New(secretsencrypt.ProviderAESCBC, time.Unix(0, 0), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	prepared, _ := first.Prepare(time.Unix(3600, 0), rand.Reader)
	rotated, err := prepared.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	load := func(s secretsencrypt.State) value.Transformer {
		ts, err := secretsencrypt.LoadState(ctx, s, filepath.Join(dir, "c.json"))
		if err != nil {
			t.Fatal(err)
		}
		return ts.For(schema.GroupResource{Resource: "secrets"})
	}
	old, current := load(first), load(rotated)
	put := func(tr value.Transformer, key, plain string) {
		data := []byte(plain)
		if tr != nil {
			if data, err = tr.TransformToStorage(ctx, data, value.DefaultContext(key)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := client.Put(ctx, key, string(data)); err != nil {
			t.Fatal(err)
		}
	}
	const n = 1200 // more than a page
	for i := 0; i < n; i++ {
		put(old, fmt.Sprintf("/registry/secrets/ns/old-%04d", i), "old")
	}
	put(nil, "/registry/secrets/ns/plain", "plain")
	put(current, "/registry/secrets/ns/current", "current")
	put(nil, "/registry/configmaps/ns/c", "not a secret")

	rewritten, err := secretsencrypt.Reencrypt(ctx, client, "/registry/secrets/", current)
	if err != nil {
		t.Fatal(err)
	}
	if rewritten != n+1 {
		t.Errorf("rewrote %d values, want %d", rewritten, n+1)
	}
	if resp, err := client.Get(ctx, "/registry/configmaps/ns/c"); err != nil || string(resp.Kvs[0].Value) != "not a secret" {
		t.Errorf("a value outside the prefix changed: %v", err)
	}
	resp, err := client.Get(ctx, "/registry/secrets/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	newPrefix := []byte("k8s:enc:aescbc:v1:" + rotated.Keys()[0][len("aescbc:"):] + ":")
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		if !bytes.HasPrefix(kv.Value, newPrefix) {
			t.Errorf("%s is not under the new key: %q", key, kv.Value[:min(40, len(kv.Value))])
		}
	}
	finished, _ := rotated.Finish()
	if _, err := secretsencrypt.Reencrypt(ctx, client, "/registry/secrets/", load(finished)); err != nil {
		t.Errorf("after the rewrite, the new key alone reads everything: %v", err)
	}
}
