package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/run"
	"orch/internal/secretsencrypt"
	"orch/internal/storage"
)

// encryptionConfigPath is where a server keeps the managed encryption
// configuration it uses (mode 0600), as upstream's
// --encryption-provider-config file.
func (c Config) encryptionConfigPath() string {
	return filepath.Join(c.serverDir(), "cred", "encryption-config.json")
}

// setUpEncryption gives the encryption at rest this server uses, nil when
// it encrypts nothing, and what follows the cluster's configuration (nil
// when there is nothing to follow):
//   - --encryption-provider-config: the user's file, as kube-apiserver's,
//     read again when it changes with
//     --encryption-provider-config-automatic-reload;
//   - otherwise the cluster's managed configuration in etcd, made by the
//     first server started with --secrets-encryption and followed by every
//     server from then on (orch secrets-encrypt changes it).
func (p parsed) setUpEncryption(ctx context.Context, client *clientv3.Client, caKeyPEM []byte, log *slog.Logger) (*secretsencrypt.Live, run.Runnable, error) {
	live := &secretsencrypt.Live{}
	if file := p.EncryptionProviderConfig; file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("--encryption-provider-config: %w", err)
		}
		t, err := secretsencrypt.Load(ctx, file)
		if err != nil {
			return nil, nil, fmt.Errorf("--encryption-provider-config: %w", err)
		}
		live.Set(t)
		if !p.EncryptionProviderConfigAutomaticReload {
			return live, nil, nil
		}
		return live, &encryptionFileReloader{path: file, live: live, sum: sha256.Sum256(data), every: encryptionReloadEvery,
			log: log.With("component", "secrets-encryption")}, nil
	}
	state, _, err := readEncryptionState(ctx, client, caKeyPEM)
	if err != nil {
		return nil, nil, err
	}
	if state == nil {
		if !p.SecretsEncryption {
			return nil, nil, nil
		}
		if state, err = createEncryptionState(ctx, client, caKeyPEM, p.SecretsEncryptionProvider); err != nil {
			return nil, nil, err
		}
		log.Info("secrets are encrypted at rest from now on", "keys", state.Keys())
	} else if !p.SecretsEncryption {
		log.Info("secrets are encrypted at rest, as the cluster's configuration says (a server started with --secrets-encryption made it)")
	}
	t, err := secretsencrypt.LoadState(ctx, *state, p.encryptionConfigPath())
	if err != nil {
		return nil, nil, err
	}
	live.Set(t)
	name := p.nodeName()
	if p.ha() {
		if name, err = p.memberName(); err != nil {
			return nil, nil, err
		}
	}
	f := &encryptionFollower{client: client, caKeyPEM: caKeyPEM, path: p.encryptionConfigPath(), live: live, server: name, hash: state.Hash(),
		log: log.With("component", "secrets-encryption")}
	return live, f, nil
}

// encryptionReloadEvery is how often a changed --encryption-provider-config
// is looked for (upstream: within a minute).
const encryptionReloadEvery = 5 * time.Second

// encryptionFileReloader is --encryption-provider-config-automatic-reload:
// a changed file replaces the configuration in use; one that does not load
// is logged and the one in use kept, as upstream.
type encryptionFileReloader struct {
	path  string
	live  *secretsencrypt.Live
	sum   [sha256.Size]byte
	every time.Duration
	log   *slog.Logger
}

func (r *encryptionFileReloader) Start(ctx context.Context) error {
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			r.reload(ctx)
		}
	}
}

func (r *encryptionFileReloader) reload(ctx context.Context) {
	data, err := os.ReadFile(r.path)
	sum := sha256.Sum256(data)
	if err != nil || sum == r.sum {
		return // a file being replaced is looked at again next time
	}
	r.sum = sum
	t, err := secretsencrypt.Load(ctx, r.path)
	if err != nil {
		r.log.Error("the changed --encryption-provider-config does not load; the configuration in use stays", "file", r.path, "err", err)
		return
	}
	r.live.Set(t)
	r.log.Info("reloaded --encryption-provider-config", "file", r.path)
}

// transformerFor adapts live to the apiserver's Config.Encryption.
func transformerFor(live *secretsencrypt.Live) func(schema.GroupResource) storage.Transformer {
	if live == nil {
		return nil
	}
	return func(gr schema.GroupResource) storage.Transformer {
		if t := live.For(gr); t != nil {
			return t
		}
		return nil
	}
}

// readEncryptionState is the cluster's managed encryption and the
// revision of its key; nil when there is none.
func readEncryptionState(ctx context.Context, client tokenStore, caKeyPEM []byte) (*secretsencrypt.State, int64, error) {
	resp, err := client.Get(ctx, secretsencrypt.Key)
	if err != nil {
		return nil, 0, fmt.Errorf("read the cluster's encryption configuration from etcd: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	s, err := secretsencrypt.Open(caKeyPEM, resp.Kvs[0].Value)
	if err != nil {
		return nil, 0, err
	}
	return &s, resp.Kvs[0].ModRevision, nil
}

// writeEncryptionState replaces the state if its key is still at revision
// rev (0: absent); false when it was not.
func writeEncryptionState(ctx context.Context, client tokenStore, caKeyPEM []byte, s secretsencrypt.State, rev int64) (bool, error) {
	sealed, err := secretsencrypt.Seal(caKeyPEM, s)
	if err != nil {
		return false, err
	}
	resp, err := client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(secretsencrypt.Key), "=", rev)).
		Then(clientv3.OpPut(secretsencrypt.Key, string(sealed))).Commit()
	if err != nil {
		return false, fmt.Errorf("write the cluster's encryption configuration to etcd: %w", err)
	}
	return resp.Succeeded, nil
}

// createEncryptionState makes the cluster's first managed configuration,
// or takes the one another server made at the same moment.
func createEncryptionState(ctx context.Context, client tokenStore, caKeyPEM []byte, provider string) (*secretsencrypt.State, error) {
	if provider == "" {
		provider = secretsencrypt.ProviderAESCBC
	}
	s, err := secretsencrypt.New(provider, time.Now(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("--secrets-encryption-provider: %w", err)
	}
	created, err := writeEncryptionState(ctx, client, caKeyPEM, s, 0)
	if err != nil || created {
		return &s, err
	}
	theirs, _, err := readEncryptionState(ctx, client, caKeyPEM)
	if err == nil && theirs == nil {
		err = errors.New("the cluster's encryption configuration was made and removed at once; start again")
	}
	return theirs, err
}

// encryptionFollower follows the cluster's managed configuration: each
// new one is written to this server's file and used at once, and the
// server publishes the hash of the one it uses (under a lease that ends
// with it) so that orch secrets-encrypt knows when every server has it.
type encryptionFollower struct {
	client   *clientv3.Client
	caKeyPEM []byte
	path     string
	live     *secretsencrypt.Live
	server   string
	log      *slog.Logger

	mu    sync.Mutex
	hash  string // of the configuration in use
	lease clientv3.LeaseID
}

// hashTTL is how long a server's published hash outlives it.
const hashTTL = 30

func (f *encryptionFollower) Start(ctx context.Context) error {
	go f.keepPublished(ctx)
	return keyFollower{store: f.client, key: secretsencrypt.Key, what: "encryption configuration", apply: func(sealed []byte) { f.apply(ctx, sealed) }, log: f.log}.Start(ctx)
}

func (f *encryptionFollower) apply(ctx context.Context, sealed []byte) {
	s, err := secretsencrypt.Open(f.caKeyPEM, sealed)
	if err != nil {
		f.log.Error("cannot use the cluster's encryption configuration; this server keeps its current one", "err", err)
		return
	}
	f.mu.Lock()
	same := s.Hash() == f.hash
	f.mu.Unlock()
	if same {
		return
	}
	t, err := secretsencrypt.LoadState(ctx, s, f.path)
	if err != nil {
		f.log.Error("cannot use the cluster's encryption configuration; this server keeps its current one", "err", err)
		return
	}
	f.live.Set(t)
	f.mu.Lock()
	f.hash = s.Hash()
	f.mu.Unlock()
	f.log.Info("encryption configuration changed", "stage", s.Stage, "keys", s.Keys())
	f.publish(ctx)
}

// keepPublished keeps this server's hash in etcd while it runs, granting
// a new lease when the old one is lost.
func (f *encryptionFollower) keepPublished(ctx context.Context) {
	for ctx.Err() == nil {
		lease, err := f.client.Grant(ctx, hashTTL)
		if err == nil {
			var alive <-chan *clientv3.LeaseKeepAliveResponse
			if alive, err = f.client.KeepAlive(ctx, lease.ID); err == nil {
				f.mu.Lock()
				f.lease = lease.ID
				f.mu.Unlock()
				f.publish(ctx)
				for range alive {
				}
			}
		}
		if ctx.Err() == nil {
			f.log.Warn("cannot keep this server's encryption hash in etcd; trying again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (f *encryptionFollower) publish(ctx context.Context) {
	f.mu.Lock()
	hash, lease := f.hash, f.lease
	f.mu.Unlock()
	if lease == 0 {
		return
	}
	if _, err := f.client.Put(ctx, secretsencrypt.HashPrefix+f.server, hash, clientv3.WithLease(lease)); err != nil && ctx.Err() == nil {
		f.log.Warn("cannot publish this server's encryption hash", "err", err)
	}
}
