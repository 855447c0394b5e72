package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"orch/internal/storage"
)

// fakeEtcd answers etcdStart's start calls with what the test sends.
type fakeEtcd chan error

func (f fakeEtcd) start() (*storage.EmbeddedEtcd, error) {
	if err := <-f; err != nil {
		return nil, err
	}
	return &storage.EmbeddedEtcd{}, nil
}

// agentProbe is an agent that reports its context when it starts.
type agentProbe chan context.Context

func (a agentProbe) Start(ctx context.Context) error {
	a <- ctx
	<-ctx.Done()
	return nil
}

func newStart(etcd fakeEtcd, agent agentProbe) etcdStart {
	s := etcdStart{start: etcd.start, agentAfter: 20 * time.Millisecond, retryAfter: time.Millisecond, log: testLogger()}
	if agent != nil {
		s.agent = agent
	}
	return s
}

type startResult struct {
	etcd  *storage.EmbeddedEtcd
	early bool
	err   error
}

func runStart(ctx context.Context, s etcdStart) <-chan startResult {
	out := make(chan startResult, 1)
	go func() {
		e, early, err := s.run(ctx)
		if early != nil {
			defer early.Stop()
		}
		out <- startResult{e, early != nil, err}
	}()
	return out
}

func TestEtcdReadyInTimeStartsNoAgentEarly(t *testing.T) {
	etcd, agent := make(fakeEtcd, 1), make(agentProbe, 1)
	etcd <- nil
	r := <-runStart(context.Background(), newStart(etcd, agent))
	if r.err != nil || r.etcd == nil || r.early {
		t.Fatalf("got %+v, want etcd and no early agent", r)
	}
	select {
	case <-agent:
		t.Fatal("the agent started though etcd was ready")
	default:
	}
}

func TestAgentRunsWhileEtcdFailsAndRetries(t *testing.T) {
	etcd, agent := make(fakeEtcd), make(agentProbe, 1)
	done := runStart(context.Background(), newStart(etcd, agent))
	agentCtx := <-agent // etcd is late: the agent starts
	etcd <- errors.New("no quorum within the timeout")
	etcd <- errors.New("no quorum within the timeout")
	if agentCtx.Err() != nil {
		t.Fatal("etcd's failure stopped the agent")
	}
	etcd <- nil
	r := <-done
	if r.err != nil || r.etcd == nil || !r.early {
		t.Fatalf("got %+v, want etcd and the early agent", r)
	}
}

func TestEtcdFailureWithoutAgentIsReturned(t *testing.T) {
	etcd := make(fakeEtcd, 1)
	broken := errors.New("broken data dir")
	etcd <- broken
	if r := <-runStart(context.Background(), newStart(etcd, nil)); !errors.Is(r.err, broken) || r.early {
		t.Fatalf("got %+v, want the failure", r)
	}
}

func TestStopWhileEtcdWaitsStopsTheAgent(t *testing.T) {
	etcd, agent := make(fakeEtcd, 1), make(agentProbe, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := runStart(ctx, newStart(etcd, agent))
	agentCtx := <-agent
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || r.early {
		t.Fatalf("got %+v, want the stop", r)
	}
	if agentCtx.Err() == nil {
		t.Fatal("the early agent still runs after the stop")
	}
	etcd <- errors.New("gave up") // the pending attempt ends
}
