package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"

	"orch/internal/jointoken"
	"orch/internal/pki"
)

// TokenRotation is what `orch token rotate` asks for.
type TokenRotation struct {
	// DataDir is the data directory of a server of the cluster: its CA
	// certificate and key are read from it and its token files rewritten.
	DataDir string
	// Agent rotates the agent token instead of the server token.
	Agent bool
	// NewToken is the new token (a full token of the cluster's CA and of
	// the kind rotated, or a passphrase); "" generates a random secret.
	NewToken string
}

// rotateAttempts bounds how often RotateToken starts over when etcd
// changed under it (a server starting at the same moment rewrites the
// bootstrap data).
const rotateAttempts = 3

// RotateToken replaces one of the cluster's join tokens, in etcd (store:
// the etcd of the server on this host): the record every server follows
// (each accepts the new token and refuses the old one within a moment)
// and the bootstrap data, sealed again with the server token, so that
// joining servers and restores of later snapshots open it with the new
// one. It also rewrites the token files of r.DataDir. It returns the
// cluster's tokens after the rotation.
func RotateToken(ctx context.Context, store tokenStore, r TokenRotation) (server, agent string, err error) {
	c := Config{DataDir: r.DataDir}
	caPEM, err := os.ReadFile(filepath.Join(c.tlsDir(), pki.CACertFile))
	if err != nil {
		return "", "", fmt.Errorf("read the cluster CA certificate: %w (run orch token rotate on a server of the cluster, with its --data-dir)", err)
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(c.tlsDir(), pki.CAKeyFile))
	if err != nil {
		return "", "", fmt.Errorf("read the cluster CA key: %w (run orch token rotate as root on a server of the cluster, with its --data-dir)", err)
	}
	kind := jointoken.ServerToken
	if r.Agent {
		kind = jointoken.AgentToken
	}
	for attempt := 1; ; attempt++ {
		next, done, err := rotateOnce(ctx, store, caPEM, caKeyPEM, kind, r.NewToken)
		if err != nil {
			return "", "", err
		}
		if done {
			if err := c.tokenFiles().write(next); err != nil {
				return next.Server, next.Agent, fmt.Errorf("the cluster's token is rotated, but %w (the running server writes its files too)", err)
			}
			return next.Server, next.Agent, nil
		}
		if attempt == rotateAttempts {
			return "", "", errors.New("the cluster's join tokens or bootstrap data kept changing during the rotation (servers starting, or another orch token rotate): run it again")
		}
	}
}

// rotateOnce reads the cluster's tokens and bootstrap data, and writes
// the rotated ones if neither changed meanwhile (done false when one did).
func rotateOnce(ctx context.Context, store tokenStore, caPEM, caKeyPEM []byte, kind jointoken.Kind, given string) (next jointoken.Record, done bool, err error) {
	current, recordRev, err := readTokenRecord(ctx, store, caKeyPEM)
	if err != nil {
		return next, false, err
	}
	if current == nil {
		return next, false, errors.New("the cluster keeps no join tokens in etcd yet: the server on this host runs an older orch; restart it with this version first")
	}
	resp, err := store.Get(ctx, bootstrapKey)
	if err != nil {
		return next, false, fmt.Errorf("read the cluster's bootstrap data from etcd: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return next, false, errors.New("the cluster keeps no bootstrap data in etcd yet: restart the server on this host with this version of orch first")
	}
	bootRev := resp.Kvs[0].ModRevision
	serverSecret, _, _ := current.Secrets()
	files, err := openBootstrap(serverSecret, resp.Kvs[0].Value)
	if err != nil {
		return next, false, fmt.Errorf("the cluster's bootstrap data in etcd does not open with its server token (%w): restart the servers, then run orch token rotate again", err)
	}
	delete(files, agentTokenKey)
	if next, err = jointoken.Rotate(*current, caPEM, kind, given); err != nil {
		return next, false, err
	}
	newSecret, _, _ := next.Secrets()
	boot, err := sealBootstrapFiles(files, newSecret, next.Agent)
	if err != nil {
		return next, false, err
	}
	record, err := jointoken.SealRecord(caKeyPEM, next)
	if err != nil {
		return next, false, err
	}
	txn, err := store.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(jointoken.Key), "=", recordRev),
		clientv3.Compare(clientv3.ModRevision(bootstrapKey), "=", bootRev),
	).Then(clientv3.OpPut(bootstrapKey, string(boot)), clientv3.OpPut(jointoken.Key, string(record))).Commit()
	if err != nil {
		return next, false, fmt.Errorf("write the new join tokens to etcd: %w", err)
	}
	return next, txn.Succeeded, nil
}
