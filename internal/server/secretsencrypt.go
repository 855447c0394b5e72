package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/pki"
	"orch/internal/secretsencrypt"
)

// SecretsEncryption is what `orch secrets-encrypt` asks of the cluster
// whose server runs on this host.
type SecretsEncryption struct {
	// DataDir is the server's data directory: the cluster CA key opens
	// the configuration in etcd.
	DataDir string
	// Force skips the check that every server uses the configuration of
	// the step before.
	Force bool
	// Out gets what the command prints.
	Out io.Writer
}

// secretsPrefix is where the apiserver keeps Secrets, the only resource a
// managed configuration encrypts.
const secretsPrefix = "/registry/secrets/"

// encryptionStore is the part of etcd the commands use.
type encryptionStore interface {
	tokenStore
	clientv3.KV
	Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan
}

// Run carries out one command: status, prepare, rotate, reencrypt, or
// rotate-keys (the three steps, each once every server has the one
// before).
func (e SecretsEncryption) Run(ctx context.Context, client encryptionStore, command string) error {
	caKeyPEM, err := os.ReadFile(filepath.Join(Config{DataDir: e.DataDir}.tlsDir(), pki.CAKeyFile))
	if err != nil {
		return fmt.Errorf("read the cluster CA key: %w (run orch secrets-encrypt as root on a server, with its --data-dir)", err)
	}
	state, _, err := readEncryptionState(ctx, client, caKeyPEM)
	if err != nil {
		return err
	}
	if state == nil {
		return errors.New("secrets are not encrypted by orch in this cluster: start a server with --secrets-encryption " +
			"(a cluster configured with --encryption-provider-config is rotated by editing that file, as upstream)")
	}
	steps := map[string][]string{"prepare": {"prepare"}, "rotate": {"rotate"}, "reencrypt": {"reencrypt"}, "rotate-keys": {"prepare", "rotate", "reencrypt"}}
	switch {
	case command == "status":
		return e.status(ctx, client, *state)
	case steps[command] == nil:
		return fmt.Errorf("unknown command %q (use status, prepare, rotate, reencrypt or rotate-keys)", command)
	}
	// One step checks that every server is ready for it; rotate-keys waits
	// until they are, before each of its steps.
	wait := command == "rotate-keys"
	for _, step := range steps[command] {
		if wait || !e.Force {
			if err := waitHashes(ctx, client, caKeyPEM, wait); err != nil {
				return err
			}
		}
		if err := e.step(ctx, client, caKeyPEM, step); err != nil {
			return err
		}
	}
	return nil
}

// step carries out one step of the rotation on the current state.
func (e SecretsEncryption) step(ctx context.Context, client encryptionStore, caKeyPEM []byte, step string) error {
	state, rev, err := readEncryptionState(ctx, client, caKeyPEM)
	if err != nil {
		return err
	}
	var next secretsencrypt.State
	switch step {
	case "prepare":
		next, err = state.Prepare(time.Now(), rand.Reader)
	case "rotate":
		next, err = state.Rotate()
	case "reencrypt":
		if next, err = state.Finish(); err != nil {
			break
		}
		var rewritten int
		if rewritten, err = reencryptSecrets(ctx, client, *state, e.DataDir); err == nil {
			fmt.Fprintf(e.Out, "re-encrypted %d Secrets with %s\n", rewritten, state.Keys()[0])
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	written, err := writeEncryptionState(ctx, client, caKeyPEM, next, rev)
	if err != nil {
		return err
	}
	if !written {
		return fmt.Errorf("%s: the encryption configuration changed meanwhile (another orch secrets-encrypt?): see status and try again", step)
	}
	fmt.Fprintf(e.Out, "%s: done; stage %s, keys %s\n", step, next.Stage, strings.Join(next.Keys(), ", "))
	return nil
}

// reencryptSecrets rewrites every Secret with state's writing key.
func reencryptSecrets(ctx context.Context, client clientv3.KV, state secretsencrypt.State, dataDir string) (int, error) {
	// The keys are written to a file only the server's data dir holds,
	// for as long as the rewrite takes.
	credDir := filepath.Dir(Config{DataDir: dataDir}.encryptionConfigPath())
	if err := os.MkdirAll(credDir, 0o700); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp(credDir, "reencrypt-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	t, err := secretsencrypt.LoadState(ctx, state, filepath.Join(dir, "encryption-config.json"))
	if err != nil {
		return 0, err
	}
	return secretsencrypt.Reencrypt(ctx, client, secretsPrefix, t.For(schema.GroupResource{Resource: "secrets"}))
}

// serverHashes are the hashes the running servers published, by server.
func serverHashes(ctx context.Context, client clientv3.KV) (map[string]string, error) {
	resp, err := client.Get(ctx, secretsencrypt.HashPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), secretsencrypt.HashPrefix)] = string(kv.Value)
	}
	return out, nil
}

// waitHashes checks that every running server uses the cluster's
// configuration; with wait, it waits (until ctx ends) for them to.
func waitHashes(ctx context.Context, client encryptionStore, caKeyPEM []byte, wait bool) error {
	for {
		state, _, err := readEncryptionState(ctx, client, caKeyPEM)
		if err != nil {
			return err
		}
		hashes, err := serverHashes(ctx, client)
		if err != nil {
			return err
		}
		var behind []string
		for server, h := range hashes {
			if h != state.Hash() {
				behind = append(behind, server)
			}
		}
		sort.Strings(behind)
		switch {
		case len(hashes) == 0:
			err = errors.New("no running server has published which configuration it uses: is the server on this host running?")
		case len(behind) > 0:
			err = fmt.Errorf("servers %s do not use the cluster's encryption configuration yet: wait until status says all match (or give --force)", strings.Join(behind, ", "))
		}
		if err == nil || !wait {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		<-client.Watch(wctx, secretsencrypt.HashPrefix, clientv3.WithPrefix())
		cancel()
		if ctx.Err() != nil {
			return err
		}
	}
}

// keyTypes are the providers as status names them (k3s's words).
var keyTypes = map[string]string{secretsencrypt.ProviderAESCBC: "AES-CBC", secretsencrypt.ProviderSecretbox: "XSalsa20-Poly1305 (secretbox)"}

// status prints the stage, the keys and whether every server uses the
// configuration, in the form k3s prints them.
func (e SecretsEncryption) status(ctx context.Context, client clientv3.KV, state secretsencrypt.State) error {
	hashes, err := serverHashes(ctx, client)
	if err != nil {
		return err
	}
	match := "All hashes match"
	var servers []string
	for server, h := range hashes {
		servers = append(servers, server)
		if h != state.Hash() {
			match = "hashes do not match"
		}
	}
	sort.Strings(servers)
	if len(hashes) == 0 {
		match = "no server has published its hash"
	}
	w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Encryption Status: Enabled\nCurrent Rotation Stage: %s\nServer Encryption Hashes: %s\n\n", state.Stage, match)
	fmt.Fprintln(w, "Active\tKey Type\tName")
	fmt.Fprintln(w, "------\t--------\t----")
	for i, k := range state.Keys() {
		active := ""
		if i == 0 {
			active = " *"
		}
		provider, name, _ := strings.Cut(k, ":")
		fmt.Fprintf(w, "%s\t%s\t%s\n", active, keyTypes[provider], name)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Server\tUses the cluster's configuration")
	for _, server := range servers {
		fmt.Fprintf(w, "%s\t%v\n", server, hashes[server] == state.Hash())
	}
	return w.Flush()
}
