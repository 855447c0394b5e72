package controller

import (
	"context"
	"log/slog"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Run is the worker loop of a sample-controller: it waits for the informers
// in synced, then runs workers that hand each key of queue to sync, requeue
// it with backoff when sync fails, and forget it when it succeeds. It blocks
// until ctx ends and shuts the queue down.
func Run(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], workers int,
	synced []cache.InformerSynced, sync func(context.Context, string) error, log *slog.Logger) error {
	defer queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	for i := 0; i < workers; i++ {
		go func() {
			for next(ctx, queue, sync, log) {
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
	if err := sync(ctx, key); err != nil && ctx.Err() == nil {
		log.Warn("sync failed; retrying with backoff", "key", key, "err", err)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}
