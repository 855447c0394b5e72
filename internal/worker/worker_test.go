package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func fastQueue() workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
}

// run starts Run in the background; the returned stop cancels it and waits
// for it to return.
func run(t *testing.T, queue workqueue.TypedRateLimitingInterface[string], r Reconciler[string], o Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		if err := Run(ctx, queue, r, o); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	return func() { cancel(); <-returned }
}

// await fails the test unless ch closes within a generous bound (an event
// awaited, not a timing asserted).
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// TestRetriesFailuresAndPanics: a key whose reconcile fails or panics comes
// back until it succeeds, and Run returns only after its workers stopped,
// with its queue shut down.
func TestRetriesFailuresAndPanics(t *testing.T) {
	queue := fastQueue()
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	var once sync.Once
	stop := run(t, queue, Errors(func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		switch {
		case key == "panics" && calls[key] == 1:
			panic("boom")
		case key == "fails" && calls[key] < 3:
			return errors.New("not yet")
		}
		if calls["panics"] >= 2 && calls["fails"] >= 3 {
			once.Do(func() { close(done) })
		}
		return nil
	}), Options{Workers: 2, Synced: []cache.InformerSynced{func() bool { return true }}, Log: discard})
	queue.Add("panics")
	queue.Add("fails")
	await(t, done, "keys were not retried to success")
	stop()
	if !queue.ShuttingDown() {
		t.Error("Run returned without shutting its queue down")
	}
	if n := queue.NumRequeues("fails"); n != 0 {
		t.Errorf("a key that succeeded still counts %d failures", n)
	}
}

// TestResultsBringTheKeyBack: Requeue brings the key back with back-off;
// After brings it back later, with its failure count forgotten.
func TestResultsBringTheKeyBack(t *testing.T) {
	queue := fastQueue()
	var calls int
	done := make(chan struct{})
	stop := run(t, queue, func(_ context.Context, key string) (Result, error) {
		calls++ // one worker: no race
		switch calls {
		case 1:
			return Result{}, errors.New("fail once")
		case 2:
			return Result{Requeue: true}, nil
		case 3:
			if n := queue.NumRequeues(key); n != 2 {
				t.Errorf("after a failure and a Requeue the key counts %d failures, want 2", n)
			}
			return Result{After: time.Millisecond}, nil
		case 4:
			if n := queue.NumRequeues(key); n != 0 {
				t.Errorf("after Result.After the key still counts %d failures", n)
			}
			close(done)
		}
		return Result{}, nil
	}, Options{Log: discard})
	defer stop()
	queue.Add("k")
	await(t, done, "the key did not come back after Requeue and After")
}

// TestDropsTerminalErrorsAndKeysOverTheRetryLimit: a terminal error is not
// retried; a failing key is dropped after MaxRetries retries. next runs
// synchronously on a queue whose back-off is zero, so every retry is queued
// at once and the queue's state after each step is exact.
func TestDropsTerminalErrorsAndKeysOverTheRetryLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		maxRetries int
		wantCalls  int
	}{
		{"terminal", Terminal(errors.New("bad spec")), 0, 1},
		{"wrapped terminal", fmt.Errorf("sync: %w", Terminal(errors.New("bad spec"))), 0, 1},
		{"retry limit", errors.New("flaky"), 3, 4},
		{"success", nil, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](0, 0))
			defer queue.ShutDown()
			calls := 0
			reconcile := Errors(func(context.Context, string) error { calls++; return tc.err })
			queue.Add("k")
			for queue.Len() > 0 {
				if !next(context.Background(), queue, reconcile, tc.maxRetries, discard) {
					t.Fatal("next reports a shut-down queue")
				}
				if calls > 10 {
					t.Fatal("the key is retried without end")
				}
			}
			if calls != tc.wantCalls {
				t.Errorf("reconciled %d times, want %d", calls, tc.wantCalls)
			}
			if n := queue.NumRequeues("k"); n != 0 {
				t.Errorf("the dropped key still counts %d failures", n)
			}
		})
	}
}

// TestOnCallerReconcilesOnTheCallingGoroutine: with OnCaller, every key is
// reconciled on the goroutine that called Run, and Run returns when ctx ends.
func TestOnCallerReconcilesOnTheCallingGoroutine(t *testing.T) {
	queue := fastQueue()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var callerID, seen int64
	reconcile := Errors(func(context.Context, string) error {
		seen = goid() // only the calling goroutine writes it
		cancel()
		return nil
	})
	queue.Add("k")
	callerID = goid()
	if err := Run(ctx, queue, reconcile, Options{OnCaller: true, Workers: 4, Log: discard}); err != nil {
		t.Fatal(err)
	}
	if seen != callerID {
		t.Errorf("reconciled on goroutine %d, not on the caller's (%d)", seen, callerID)
	}
	if !queue.ShuttingDown() {
		t.Error("Run returned without shutting its queue down")
	}
}

// goid is the current goroutine's id, read from its stack header.
func goid() int64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	var id int64
	fmt.Sscanf(string(buf), "goroutine %d ", &id)
	return id
}

func TestTerminal(t *testing.T) {
	if Terminal(nil) != nil {
		t.Error("Terminal(nil) is not nil")
	}
	base := errors.New("x")
	if err := Terminal(base); !IsTerminal(err) || !errors.Is(err, base) || err.Error() != "x" {
		t.Errorf("Terminal(x) = %v: not terminal, or does not wrap x", err)
	}
	if IsTerminal(base) {
		t.Error("a plain error counts as terminal")
	}
}
