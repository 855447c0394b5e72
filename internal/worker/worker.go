// Package worker is the one loop every control loop of orch runs on: the
// controllers, the kubelet's pod workers and the agent's network writers.
// Informers (or anything else) add keys to a rate-limited workqueue; Run
// hands each key to a Reconciler, one key at a time per worker, and does with
// the key what the Reconciler's answer asks:
//
//   - nil error, zero Result: the key is done (its failure count is forgotten);
//   - nil error, Result{After: d}: done, and looked at again in d;
//   - nil error, Result{Requeue: true}: not done yet, though nothing failed;
//     looked at again after the queue's back-off, with nothing logged;
//   - an error: retried with the queue's back-off (client-go's default
//     controller rate limiter is upstream's 5 ms doubling to 1000 s), until
//     Options.MaxRetries failures in a row, when it is logged and dropped
//     until something adds the key again;
//   - an error wrapped by Terminal: logged and dropped at once;
//   - a panic: a failure like any error, so one bad object cannot bring the
//     process down.
//
// The package sits below the scheduler, the controllers and the kubelet, and
// imports none of them.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Result is what a successful reconcile asks of the loop.
type Result struct {
	// After, when positive, brings the key back after this long.
	After time.Duration
	// Requeue brings the key back after the queue's back-off, as a failure
	// would, but quietly: for "not yet" (an owner not seen yet, say).
	Requeue bool
}

// Reconciler makes the world match what key names.
type Reconciler[K comparable] func(ctx context.Context, key K) (Result, error)

// Errors adapts a sync that only fails or succeeds into a Reconciler.
func Errors[K comparable](sync func(context.Context, K) error) Reconciler[K] {
	return func(ctx context.Context, key K) (Result, error) { return Result{}, sync(ctx, key) }
}

// Options tune Run; the zero value is one worker, no informers to wait
// for, unlimited retries and slog's default logger.
type Options struct {
	// Workers is how many keys are reconciled at once (at least 1).
	Workers int
	// Synced are waited for before the first key is handed out.
	Synced []cache.InformerSynced
	// MaxRetries, when positive, drops a key after this many failures in a
	// row (upstream's controllers use 15 for Deployments, 5 for Jobs …).
	MaxRetries int
	// Log receives the failures, scoped by the caller.
	Log *slog.Logger
	// OnCaller reconciles on the goroutine that called Run, one key at a
	// time (Workers is ignored): for a caller whose OS thread is locked
	// into a network namespace, which other goroutines do not share.
	OnCaller bool
}

// terminal marks an error that retrying cannot cure.
type terminal struct{ err error }

func (t terminal) Error() string { return t.err.Error() }
func (t terminal) Unwrap() error { return t.err }

// Terminal wraps err so that Run logs it and drops the key instead of
// retrying; nil stays nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return terminal{err}
}

// IsTerminal tells whether err, or an error it wraps, came from Terminal.
func IsTerminal(err error) bool {
	var t terminal
	return errors.As(err, &t)
}

// Run waits for o.Synced, then reconciles the keys of queue with o.Workers
// workers until ctx ends; it then shuts queue down and returns once every
// worker has finished its key. It returns nil: failures are the keys'.
func Run[K comparable](ctx context.Context, queue workqueue.TypedRateLimitingInterface[K], reconcile Reconciler[K], o Options) error {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), o.Synced...) {
		return nil // ctx ended first
	}
	if o.OnCaller {
		stopped := make(chan struct{})
		defer close(stopped)
		go func() {
			select {
			case <-ctx.Done():
				queue.ShutDown()
			case <-stopped:
			}
		}()
		for next(ctx, queue, reconcile, o.MaxRetries, log) {
		}
		return nil
	}
	for range max(o.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next(ctx, queue, reconcile, o.MaxRetries, log) {
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// next reconciles one key; false once queue shuts down.
func next[K comparable](ctx context.Context, queue workqueue.TypedRateLimitingInterface[K], reconcile Reconciler[K], maxRetries int, log *slog.Logger) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	res, err := safely(ctx, key, reconcile)
	switch {
	case err == nil && res.Requeue:
		queue.AddRateLimited(key)
	case err == nil:
		queue.Forget(key)
		if res.After > 0 {
			queue.AddAfter(key, res.After)
		}
	case ctx.Err() != nil:
		// Stopping: the error is most likely the cancellation itself.
		queue.Forget(key)
	case IsTerminal(err):
		log.Error("cannot reconcile; not retrying until it changes", "key", key, "err", err)
		queue.Forget(key)
	case maxRetries > 0 && queue.NumRequeues(key) >= maxRetries:
		log.Error("reconcile keeps failing; dropping it until it changes", "key", key, "err", err, "failures", queue.NumRequeues(key)+1)
		queue.Forget(key)
	default:
		log.Info("reconcile failed; retrying with back-off", "key", key, "err", err, "failures", queue.NumRequeues(key)+1)
		queue.AddRateLimited(key)
	}
	return true
}

// safely turns a panic in reconcile into an error.
func safely[K comparable](ctx context.Context, key K, reconcile Reconciler[K]) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while reconciling: %v", r)
		}
	}()
	return reconcile(ctx, key)
}
