package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"orch/internal/localstore"
	"orch/internal/run"
	"orch/internal/storage"
)

// offlineAgentAfter is how long a member of several waits for etcd before
// its node's agent starts without the API; etcdRetryAfter is the pause
// before it tries etcd again while that agent runs.
const offlineAgentAfter, etcdRetryAfter = 5 * time.Second, 5 * time.Second

// etcdStart starts a server's etcd member. A member of several waits for
// a quorum of the members, which after a power cut may take long (start
// gives up after 10 minutes): if etcd is not ready within agentAfter,
// agent (the node's own, when it may start without the API) starts
// meanwhile and runs the node's pods from its local store, and start is
// tried again, every retryAfter, for as long as it fails.
type etcdStart struct {
	start      func() (*storage.EmbeddedEtcd, error)
	agent      run.Runnable // nil: no agent starts before etcd
	agentAfter time.Duration
	retryAfter time.Duration
	log        *slog.Logger
}

type etcdStarted struct {
	etcd *storage.EmbeddedEtcd
	err  error
}

// run returns the started member and early, the agent already running
// (nil if it did not start). When ctx ends first it stops that agent and
// returns ctx's error; a member that starts later is closed.
func (s etcdStart) run(ctx context.Context) (etcd *storage.EmbeddedEtcd, early *run.Started, err error) {
	attempt := s.attempt(0)
	var agentDue <-chan time.Time // nil: never
	if s.agent != nil {
		agentDue = time.After(s.agentAfter)
	}
	for {
		select {
		case <-agentDue:
			s.log.Warn("etcd is not ready (no quorum of the servers yet?): the node's agent starts meanwhile and runs its pods from its local store",
				"waited", s.agentAfter)
			early, agentDue = run.Begin(ctx, s.loggedAgent()), nil
		case r := <-attempt:
			switch {
			case r.err == nil:
				return r.etcd, early, nil
			case early == nil:
				return nil, nil, r.err
			}
			s.log.Error("etcd did not start; the node's agent keeps running its pods; trying again", "err", r.err, "in", s.retryAfter)
			attempt = s.attempt(s.retryAfter)
		case <-ctx.Done():
			if early != nil {
				early.Stop()
			}
			go func() {
				if r := <-attempt; r.err == nil {
					r.etcd.Close()
				}
			}()
			return nil, nil, ctx.Err()
		}
	}
}

// attempt runs start after delay.
func (s etcdStart) attempt(delay time.Duration) <-chan etcdStarted {
	ch := make(chan etcdStarted, 1)
	go func() {
		time.Sleep(delay)
		e, err := s.start()
		ch <- etcdStarted{e, err}
	}()
	return ch
}

// loggedAgent is the agent, its failure logged when it happens: until
// etcd is ready no group reports it.
func (s etcdStart) loggedAgent() run.Runnable {
	return run.Func(func(ctx context.Context) error {
		err := s.agent.Start(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Error("the node's agent failed while etcd was not ready", "err", err)
		}
		return err
	})
}

// earlyAgent is ownAgent if it may start before etcd is ready: on a server
// of several, with an agent that ran before (it has a local store).
func (p parsed) earlyAgent(ownAgent run.Runnable) run.Runnable {
	if !p.ha() || p.DisableAgent {
		return nil
	}
	if _, err := os.Stat(filepath.Join(p.DataDir, "agent", localstore.DBFile)); err != nil {
		return nil
	}
	return ownAgent
}
