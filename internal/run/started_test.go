package run

import (
	"context"
	"errors"
	"log/slog"
	"testing"
)

// probe is a runnable that hands out its context once it runs and ends
// with err (nil: when its context ends).
type probe struct {
	err     error
	running chan context.Context
}

func newProbe(err error) *probe { return &probe{err: err, running: make(chan context.Context, 1)} }

func (p *probe) Start(ctx context.Context) error {
	p.running <- ctx
	if p.err != nil {
		return p.err
	}
	<-ctx.Done()
	return nil
}

func TestStartedRunsBeforeItsGroupAndStopsWithIt(t *testing.T) {
	p := newProbe(nil)
	s := Begin(context.Background(), p)
	ctx := <-p.running // before any group
	group, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- Group(group, slog.Default(), Named{Name: "early", Runnable: s}) }()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("the group ended with %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the group stopped without stopping the runnable")
	}
	if err := s.Stop(); err != nil { // again, as a deferred Stop would
		t.Fatalf("Stop after the group: %v", err)
	}
}

func TestStartedFailureEndsItsGroup(t *testing.T) {
	failed := errors.New("broken")
	s := Begin(context.Background(), newProbe(failed))
	if err := Group(context.Background(), slog.Default(), Named{Name: "early", Runnable: s}); !errors.Is(err, failed) {
		t.Fatalf("the group ended with %v, want the runnable's failure", err)
	}
}

func TestStartedOutlivesItsCallersContext(t *testing.T) {
	p := newProbe(nil)
	caller, cancel := context.WithCancel(context.Background())
	s := Begin(caller, p)
	ctx := <-p.running
	cancel()
	if ctx.Err() != nil {
		t.Fatal("the runnable stopped with its caller's context, before its group stopped it")
	}
	if err := s.Stop(); err != nil || ctx.Err() == nil {
		t.Fatalf("Stop: %v, the runnable's context %v", err, ctx.Err())
	}
}
