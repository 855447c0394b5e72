package run

import "context"

// Started is a Runnable started ahead of the group it then joins: a
// component that must not wait for the ones before it in some cases (the
// agent of a server whose etcd waits for a quorum).
type Started struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the runnable has ended, with err
	err    error
}

// Begin starts r now. Like a component of a Group, it runs until it is
// stopped (by Stop, or by the group it joins) even if ctx ends first.
func Begin(ctx context.Context, r Runnable) *Started {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Started{cancel: cancel, done: make(chan struct{})}
	go func() {
		s.err = r.Start(ctx)
		close(s.done)
	}()
	return s
}

// Start waits, as a component of a Group, until the runnable ends (and
// returns its error) or ctx ends (then it stops the runnable).
func (s *Started) Start(ctx context.Context) error {
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return s.Stop()
	}
}

// Stop stops the runnable, waits for it to end and returns its error; it
// may be called again.
func (s *Started) Stop() error {
	s.cancel()
	<-s.done
	return s.err
}
