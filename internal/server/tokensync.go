package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	clientv3 "go.etcd.io/etcd/client/v3"

	"orch/internal/jointoken"
)

// tokenStore is the part of etcd that starting servers and rotations
// use for the join tokens; *clientv3.Client is one.
type tokenStore interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Txn(ctx context.Context) clientv3.Txn
}

// watchedTokenStore is a tokenStore that tokenWatcher can follow.
type watchedTokenStore interface {
	tokenStore
	Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan
}

var _ watchedTokenStore = (*clientv3.Client)(nil)

// tokenFiles are where a server keeps its join tokens.
type tokenFiles struct{ server, agent string }

func (c Config) tokenFiles() tokenFiles {
	return tokenFiles{server: c.tokenPath(), agent: c.agentTokenPath()}
}

// write puts r's tokens in the files.
func (f tokenFiles) write(r jointoken.Record) error {
	if err := writeTokenFile(f.server, r.Server); err != nil {
		return err
	}
	return writeTokenFile(f.agent, r.Agent)
}

// readTokenRecord returns the cluster's join tokens and the revision of
// their key (0 and nil when there are none yet).
func readTokenRecord(ctx context.Context, store tokenStore, caKeyPEM []byte) (*jointoken.Record, int64, error) {
	resp, err := store.Get(ctx, jointoken.Key)
	if err != nil {
		return nil, 0, fmt.Errorf("read the cluster's join tokens from etcd: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	r, err := jointoken.OpenRecord(caKeyPEM, resp.Kvs[0].Value)
	if err != nil {
		return nil, 0, err
	}
	return &r, resp.Kvs[0].ModRevision, nil
}

// syncAttempts bounds how often syncTokens starts over when etcd changed
// under it (a rotation or another server starting at the same moment).
const syncAttempts = 5

// syncTokens agrees a starting server's join tokens (local, from its
// files and flags) with the cluster's (see jointoken.Reconcile), rewrites
// the files that are behind, and stores the bootstrap data sealed with
// the server token, all in one etcd transaction. It returns the tokens
// the server accepts.
func (p parsed) syncTokens(ctx context.Context, store tokenStore, caKeyPEM []byte, local jointoken.Record, log *slog.Logger) (jointoken.Record, error) {
	for attempt := 1; ; attempt++ {
		cluster, rev, err := readTokenRecord(ctx, store, caKeyPEM)
		if err != nil {
			return jointoken.Record{}, fmt.Errorf("orch server: %w", err)
		}
		out, err := jointoken.Reconcile(local, cluster, p.tokensGiven())
		if err != nil {
			return jointoken.Record{}, fmt.Errorf("orch server: %w", err)
		}
		serverSecret, _, _ := out.Record.Secrets()
		boot, err := sealBootstrap(p.tlsDir(), serverSecret, out.Record.Agent)
		if err != nil {
			return jointoken.Record{}, fmt.Errorf("orch server: seal the cluster's bootstrap data: %w", err)
		}
		ops := []clientv3.Op{clientv3.OpPut(bootstrapKey, string(boot))}
		if out.Write {
			sealed, err := jointoken.SealRecord(caKeyPEM, out.Record)
			if err != nil {
				return jointoken.Record{}, fmt.Errorf("orch server: %w", err)
			}
			ops = append(ops, clientv3.OpPut(jointoken.Key, string(sealed)))
		}
		resp, err := store.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(jointoken.Key), "=", rev)).Then(ops...).Commit()
		if err != nil {
			return jointoken.Record{}, fmt.Errorf("orch server: store the join tokens in etcd: %w", err)
		}
		if !resp.Succeeded {
			if attempt == syncAttempts {
				return jointoken.Record{}, errors.New("orch server: the cluster's join tokens kept changing while this server started; start it again")
			}
			continue
		}
		if out.AdoptedServer || out.AdoptedAgent {
			if err := p.tokenFiles().write(out.Record); err != nil {
				return jointoken.Record{}, err
			}
		}
		switch {
		case out.AdoptedServer:
			log.Warn("the cluster's server token was rotated while this server was stopped: it now accepts the new one only and wrote it to its token file",
				"file", p.tokenPath())
		case out.ReplacedAgent:
			log.Warn("--agent-token replaced the cluster's agent token on every server: agents that joined with the old one need the new one for their next renewal",
				"file", p.agentTokenPath())
		case out.AdoptedAgent:
			log.Warn("the cluster's agent token was rotated while this server was stopped: it now accepts the new one only and wrote it to its token file",
				"file", p.agentTokenPath())
		}
		return out.Record, nil
	}
}

// tokenWatcher follows the cluster's join tokens in etcd (with a
// keyFollower): when they change (orch token rotate on any server), it
// swaps the ones the join handler accepts, so the old ones get 401 at once,
// and rewrites this server's token files.
type tokenWatcher struct {
	caKeyPEM []byte
	holder   *jointoken.Holder
	files    tokenFiles
	// given says which tokens this server's flags give, to warn that they
	// are now out of date.
	given jointoken.Given
	log   *slog.Logger
}

// apply makes a sealed record the current tokens. A record this server
// cannot open is logged and the current tokens stay.
func (w *tokenWatcher) apply(sealed []byte) {
	r, err := jointoken.OpenRecord(w.caKeyPEM, sealed)
	if err != nil {
		w.log.Error("cannot use the cluster's join tokens; this server keeps accepting its current ones", "err", err)
		return
	}
	before := w.holder.Load()
	changed, err := w.holder.Store(r)
	if err != nil {
		w.log.Error("cannot use the cluster's join tokens; this server keeps accepting its current ones", "err", err)
		return
	}
	if !changed {
		return
	}
	if err := w.files.write(r); err != nil {
		w.log.Error("cannot write the new join tokens to this server's files (it accepts them nonetheless)", "err", err)
	}
	if before.Server != r.Server {
		w.log.Warn("the cluster's server token was rotated: this server accepts the new one only", "file", w.files.server)
		if w.given.Server {
			w.log.Warn("put the new server token in this server's --token (or --token-file) before it restarts: it will refuse to start with the old one", "file", w.files.server)
		}
	}
	if before.Agent != r.Agent {
		w.log.Warn("the cluster's agent token was rotated: this server accepts the new one only", "file", w.files.agent)
		if w.given.Agent {
			w.log.Warn("put the new agent token in this server's --agent-token (or --agent-token-file), or remove the flag, before it restarts: it will refuse to start with the old one",
				"file", w.files.agent)
		}
	}
}
