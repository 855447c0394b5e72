package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Run is the worker loop of a sample-controller: it waits for the informers
// in synced, then runs workers that hand each key of queue to sync, requeue
// it with backoff when sync fails (a panic counts as a failure, so one bad
// object cannot bring the server down), and forget it when it succeeds. It
// blocks until ctx ends, then shuts the queue down and waits for the workers.
func Run(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], workers int,
	synced []cache.InformerSynced, syncKey func(context.Context, string) error, log *slog.Logger) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next(ctx, queue, syncKey, log) {
			}
		}()
	}
	<-ctx.Done()
	return nil
}

func next(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error, log *slog.Logger) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	if err := syncSafely(ctx, key, sync); err != nil && ctx.Err() == nil {
		log.Warn("sync failed; retrying with backoff", "key", key, "err", err)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

func syncSafely(ctx context.Context, key string, sync func(context.Context, string) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while syncing: %v", r)
		}
	}()
	return sync(ctx, key)
}
