package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// TestRunRetriesFailuresAndPanics: a key whose sync fails or panics comes
// back until it succeeds, and Run returns only after its workers stopped.
func TestRunRetriesFailuresAndPanics(t *testing.T) {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	sync := func(_ context.Context, key string) error {
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
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		Run(ctx, queue, 2, []cache.InformerSynced{func() bool { return true }}, sync, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(returned)
	}()
	queue.Add("panics")
	queue.Add("fails")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("keys were not retried to success: %v", calls)
	}
	cancel()
	<-returned
	if !queue.ShuttingDown() {
		t.Error("Run returned without shutting its queue down")
	}
}
