package storage_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"errors"
	"testing"

	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"

	"orch/internal/storage"
	"orch/internal/storage/storagetest"
)

// aescbc is upstream's aescbc provider with the named keys, the first
// one writing.
func aescbc(t *testing.T, keys ...string) storage.Transformer {
	var prefixed []value.PrefixTransformer
	for _, name := range keys {
		block, err := aes.NewCipher(bytes.Repeat([]byte(name[:1]), 32))
		if err != nil {
			t.Fatal(err)
		}
		prefixed = append(prefixed, value.PrefixTransformer{Prefix: []byte("k8s:enc:aescbc:v1:" + name + ":"), Transformer: aestransformer.NewCBCTransformer(block)})
	}
	return value.NewPrefixTransformers(errors.New("no matching prefix found"), prefixed...)
}

// A transformed store behaves as any store to its callers.
func TestTransformedConformance(t *testing.T) {
	storagetest.Run(t, storage.Transformed(storage.NewEtcd(startEtcd(t).Client), aescbc(t, "one")))
}

// What reaches etcd is ciphertext under upstream's prefix; a store that
// knows a newer key first reads old values as stale, and an update writes
// them with the newer key; a store without the key refuses to read.
func TestTransformedAtRest(t *testing.T) {
	ctx := context.Background()
	raw := storage.NewEtcd(startEtcd(t).Client)
	old := storage.Transformed(raw, aescbc(t, "a-old"))
	rev, err := old.Create(ctx, "/registry/secrets/ns/s", []byte("password=hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := raw.Get(ctx, "/registry/secrets/ns/s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(kv.Value, []byte("k8s:enc:aescbc:v1:a-old:")) || bytes.Contains(kv.Value, []byte("hunter2")) {
		t.Fatalf("stored %q, want aescbc ciphertext", kv.Value)
	}

	rotated := storage.Transformed(raw, aescbc(t, "b-new", "a-old"))
	if got, err := rotated.Get(ctx, "/registry/secrets/ns/s"); err != nil || string(got.Value) != "password=hunter2" {
		t.Fatalf("read with the old key second: %q %v", got.Value, err)
	}
	if stale, err := storage.Stale(ctx, rotated, "/registry/secrets/ns/s"); err != nil || !stale {
		t.Fatalf("stale = %v %v, want true", stale, err)
	}
	if _, err := rotated.Update(ctx, "/registry/secrets/ns/s", []byte("password=hunter2"), rev); err != nil {
		t.Fatal(err)
	}
	if stale, err := storage.Stale(ctx, rotated, "/registry/secrets/ns/s"); err != nil || stale {
		t.Fatalf("after the rewrite stale = %v %v, want false", stale, err)
	}
	kv, _ = raw.Get(ctx, "/registry/secrets/ns/s")
	if !bytes.HasPrefix(kv.Value, []byte("k8s:enc:aescbc:v1:b-new:")) {
		t.Fatalf("rewritten as %q, want the new key's prefix", kv.Value[:24])
	}

	// Without the key, nothing is passed off as plain: get, list and watch
	// fail, naming the key.
	if _, err := old.Get(ctx, "/registry/secrets/ns/s"); err == nil {
		t.Error("a store without the new key read the value")
	}
	if _, err := old.List(ctx, "/registry/secrets/", storage.ListOptions{}); err == nil {
		t.Error("a store without the new key listed the value")
	}
	if ev := <-old.Watch(ctx, "/registry/secrets/", rev); ev.Type != storage.Error {
		t.Errorf("a watch without the new key sent %+v, want an error", ev)
	}
	if stale, err := storage.Stale(ctx, raw, "/registry/secrets/ns/s"); err != nil || stale {
		t.Errorf("a plain store says stale = %v %v", stale, err)
	}
}
