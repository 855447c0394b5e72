package secretsencrypt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"

	"orch/internal/join"
)

// Key holds the cluster's State in etcd, sealed; HashPrefix+SERVER holds
// the hash of the configuration each server uses, under a lease that ends
// with the server. Both are outside /registry: the apiserver never serves
// them.
const (
	Key        = "/orch/secrets-encryption"
	HashPrefix = "/orch/secrets-encryption-hashes/"
)

// recordSecret is what the State is sealed with: a hash of the cluster
// CA's private key, which every server has (and a snapshot carries, sealed
// with the server token), never the key itself.
func recordSecret(caKeyPEM []byte) string {
	sum := sha256.Sum256(append([]byte("orch secrets encryption\x00"), caKeyPEM...))
	return hex.EncodeToString(sum[:])
}

// Seal encrypts s for etcd.
func Seal(caKeyPEM []byte, s State) ([]byte, error) {
	if len(caKeyPEM) == 0 {
		return nil, errors.New("seal the encryption configuration: the cluster CA key is empty")
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return join.Seal(recordSecret(caKeyPEM), plain)
}

// Open reverses Seal.
func Open(caKeyPEM, sealed []byte) (State, error) {
	plain, err := join.Open(recordSecret(caKeyPEM), sealed)
	if err != nil {
		return State{}, fmt.Errorf("cannot open the cluster's encryption configuration with this server's CA key (%w): "+
			"data-dir/server/tls/ca.key must be the cluster's", err)
	}
	var s State
	if err := json.Unmarshal(plain, &s); err != nil {
		return State{}, fmt.Errorf("the cluster's encryption configuration is unreadable: %w", err)
	}
	return s, nil
}

// Transformers are the transformers of an EncryptionConfiguration file,
// built by k8s.io/apiserver as kube-apiserver builds them (so its
// validation, providers and key prefixes are upstream's), for every
// resource the file names, with upstream's rules for "*." and "*.*".
type Transformers struct {
	all encryptionconfig.StaticTransformers
	// Hash is what the file's contents hash to (upstream's).
	Hash string
}

// Load reads the configuration file at path.
func Load(ctx context.Context, path string) (*Transformers, error) {
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "orch")
	if err != nil {
		return nil, fmt.Errorf("encryption configuration %s: %w", path, err)
	}
	return &Transformers{all: cfg.Transformers, Hash: cfg.EncryptionFileContentHash}, nil
}

// LoadState writes s's configuration to path (mode 0600; its keys are in
// it) and loads it.
func LoadState(ctx context.Context, s State, path string) (*Transformers, error) {
	data, err := s.File()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return Load(ctx, path)
}

// For is the transformer of resource gr, or nil when the configuration
// does not name it (it is stored as it is).
func (t *Transformers) For(gr schema.GroupResource) value.Transformer {
	for _, candidate := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
		if _, ok := t.all[candidate]; ok {
			return t.all.TransformerForResource(gr)
		}
	}
	return nil
}

// Live is the configuration a server uses now; a new one (a step of a
// rotation on any server) replaces it while requests run.
type Live struct {
	cur atomic.Pointer[Transformers]
}

// Set makes t the configuration in use.
func (l *Live) Set(t *Transformers) { l.cur.Store(t) }

// For is resource gr's transformer, or nil when the configuration in use
// does not name it. It follows later configurations; one that no longer
// names gr stores it as it is and refuses to read encrypted values
// (upstream's identity check).
func (l *Live) For(gr schema.GroupResource) value.Transformer {
	if t := l.cur.Load(); t == nil || t.For(gr) == nil {
		return nil
	}
	return liveTransformer{l: l, gr: gr}
}

type liveTransformer struct {
	l  *Live
	gr schema.GroupResource
}

func (t liveTransformer) current() value.Transformer {
	if tr := t.l.cur.Load().For(t.gr); tr != nil {
		return tr
	}
	return identity.NewEncryptCheckTransformer()
}

func (t liveTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	return t.current().TransformFromStorage(ctx, data, dataCtx)
}

func (t liveTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	return t.current().TransformToStorage(ctx, data, dataCtx)
}
