package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"orch/internal/etcdsnapshot"
	"orch/internal/join"
	"orch/internal/pki"
)

// bootstrapKey holds, in etcd, the shared files of the cluster (see
// sharedFiles) and its agent token, sealed with the server token, so that a snapshot has
// everything a new host needs to restore the cluster given the token.
// It is outside /registry: the apiserver never serves it.
const bootstrapKey = "/orch/bootstrap"

// optionalSharedFile is true for the shared files a server may lack: a
// single server has no etcd CA, and a server of an older version no front
// proxy CA (a server joining it makes its own).
func optionalSharedFile(name string) bool {
	return strings.HasPrefix(name, "etcd"+string(filepath.Separator)) || strings.HasPrefix(name, "front-proxy"+string(filepath.Separator))
}

// readSharedFiles reads the shared files this server has.
func readSharedFiles(tlsDir string) (map[string]string, error) {
	files := map[string]string{}
	for _, name := range sharedFiles {
		data, err := os.ReadFile(filepath.Join(tlsDir, name))
		if errors.Is(err, os.ErrNotExist) && optionalSharedFile(name) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		files[name] = string(data)
	}
	return files, nil
}

// sealBootstrap seals the shared files of tlsDir, and the agent token,
// with the server token's secret: the value of bootstrapKey.
func sealBootstrap(tlsDir, serverSecret, agentToken string) ([]byte, error) {
	files, err := readSharedFiles(tlsDir)
	if err != nil {
		return nil, err
	}
	return sealBootstrapFiles(files, serverSecret, agentToken)
}

// sealBootstrapFiles seals files, with the agent token under
// agentTokenKey, with the server token's secret.
func sealBootstrapFiles(files map[string]string, serverSecret, agentToken string) ([]byte, error) {
	all := make(map[string]string, len(files)+1)
	for name, data := range files {
		all[name] = data
	}
	all[agentTokenKey] = agentToken
	plain, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	return join.Seal(serverSecret, plain)
}

// openBootstrap reverses sealBootstrap: the shared files, and the agent
// token under agentTokenKey.
func openBootstrap(serverSecret string, sealed []byte) (map[string]string, error) {
	plain, err := join.Open(serverSecret, sealed)
	if err != nil {
		return nil, err
	}
	var files map[string]string
	if err := json.Unmarshal(plain, &files); err != nil {
		return nil, fmt.Errorf("the cluster's bootstrap data is unreadable: %w", err)
	}
	return files, nil
}

// restoreSnapshot is --cluster-reset --cluster-reset-restore-path: it
// replaces the etcd data with the snapshot's (the old data moved aside),
// as a cluster of this one member, and puts the snapshot's certificates
// and keys in place, opened with the token.
func (p parsed) restoreSnapshot(ctx context.Context, log *slog.Logger) error {
	name, peerURL := "orch", "https://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(p.EtcdPeerPort))
	if p.ha() {
		var err error
		if name, err = p.memberName(); err != nil {
			return err
		}
		peerURL = "https://" + net.JoinHostPort(p.advertise.String(), strconv.Itoa(p.EtcdPeerPort))
	}
	token, err := p.restoreToken()
	if err != nil {
		return err
	}
	if err := etcdsnapshot.Restore(ctx, p.RestorePath, p.etcdDir(), name, peerURL, log); err != nil {
		return err
	}
	sealed, err := etcdsnapshot.ReadKey(p.etcdDir(), bootstrapKey)
	if errors.Is(err, etcdsnapshot.ErrKeyNotFound) {
		log.Warn("the snapshot holds no cluster certificates (taken by an older orch?); this host's are kept")
		return nil
	}
	if err != nil {
		return err
	}
	t, err := pki.ParseJoinToken(token)
	if err != nil {
		return fmt.Errorf("orch server: --token: %w", err)
	}
	files, err := openBootstrap(t.Secret, sealed)
	if err != nil {
		return fmt.Errorf("orch server: the token does not open the snapshot's certificates (%w): give the server token of the cluster the snapshot was taken from with --token "+
			"(a snapshot taken before orch token rotate opens with the token of then)", err)
	}
	return p.writeSharedFiles(files, token)
}

// writeSharedFiles puts the cluster's shared files (from a joined server
// or a snapshot), its token and its agent token (a snapshot's, under
// agentTokenKey) where pki.Ensure and ensureTokens find them.
func (p parsed) writeSharedFiles(files map[string]string, token string) error {
	for rel, data := range files {
		if rel == agentTokenKey {
			if err := p.writeAgentToken(data); err != nil {
				return err
			}
			continue
		}
		if !slices.Contains(sharedFiles, rel) {
			return fmt.Errorf("orch server: the cluster's shared files name an unexpected file %q", rel)
		}
		path := filepath.Join(p.tlsDir(), rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			return fmt.Errorf("orch server: write %s: %w", path, err)
		}
	}
	t, err := pki.ParseJoinToken(token)
	if err != nil {
		return fmt.Errorf("orch server: --token: %w", err)
	}
	if t.Passphrase() { // the file holds the full form
		ca, ok := files[pki.CACertFile]
		if !ok {
			return fmt.Errorf("orch server: the cluster's shared files lack %s", pki.CACertFile)
		}
		token = pki.FormatToken(pki.CAHash([]byte(ca)), t.Secret)
	}
	return writeTokenFile(p.tokenPath(), token)
}

// restoreToken is --token or --token-file, else the token this data dir has.
func (p parsed) restoreToken() (string, error) {
	if p.Token != "" || p.TokenFile != "" {
		return p.joinToken()
	}
	data, err := os.ReadFile(p.tokenPath())
	if err != nil {
		return "", fmt.Errorf("orch server: restoring on a new host needs the cluster's token: give it with --token or --token-file (%w)", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// clusterReset restores the snapshot and returns: the next start, without
// --cluster-reset, runs on the restored data (starting from it right away
// would restore again at every restart while the flag stays in a config).
func (p parsed) clusterReset(ctx context.Context, log *slog.Logger) error {
	if p.RestorePath == "" {
		return errors.New("orch server: --cluster-reset needs --cluster-reset-restore-path=FILE (an etcd snapshot, see orch etcd-snapshot ls); " +
			"resetting the membership of the current data without a snapshot is not implemented")
	}
	if err := p.restoreSnapshot(ctx, log); err != nil {
		return err
	}
	log.Info("restored the etcd snapshot; now start orch server without --cluster-reset (other servers of an HA cluster join it afresh with empty data dirs)",
		"snapshot", p.RestorePath, "data-dir", p.DataDir)
	return nil
}

func (c Config) snapshotDir() string {
	if c.SnapshotDir != "" {
		return c.SnapshotDir
	}
	return etcdsnapshot.DefaultDir(c.DataDir)
}
