// Package run starts long-lived components in order and stops them in
// reverse. A component is a Runnable: Start blocks until its context ends
// and returns an error only when it fails.
package run

import (
	"context"
	"fmt"
	"log/slog"
)

// Runnable is a long-lived component.
type Runnable interface {
	Start(ctx context.Context) error
}

// Func adapts a function to Runnable.
type Func func(ctx context.Context) error

// Start implements Runnable.
func (f Func) Start(ctx context.Context) error { return f(ctx) }

// Named is a Runnable with a name for logs and errors.
type Named struct {
	Name string
	Runnable
}

// Group runs components until ctx ends or one of them fails; then it stops
// the rest, last started first, and returns the first failure.
func Group(ctx context.Context, log *slog.Logger, components ...Named) error {
	errs := make(chan error, len(components))
	cancels := make([]context.CancelFunc, len(components))
	dones := make([]chan struct{}, len(components))
	for i, c := range components {
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cancels[i], dones[i] = cancel, make(chan struct{})
		go func() {
			defer close(dones[i])
			if err := c.Start(cctx); err != nil && cctx.Err() == nil {
				errs <- fmt.Errorf("%s: %w", c.Name, err)
				return
			}
			if cctx.Err() == nil {
				errs <- fmt.Errorf("%s stopped unexpectedly", c.Name)
			}
		}()
	}
	var first error
	select {
	case <-ctx.Done():
	case first = <-errs:
		log.Error("component failed; stopping", "err", first)
	}
	for i := len(components) - 1; i >= 0; i-- {
		cancels[i]()
		<-dones[i]
	}
	return first
}
