package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyFollower follows one etcd key that servers share (the join tokens,
// the encryption configuration): it calls apply with the value etcd has
// when it starts and with each new one, until ctx ends, following again
// after an error (etcd unreachable) with a backoff.
type keyFollower struct {
	store watchedTokenStore
	key   string
	// what names the key in logs ("join tokens").
	what  string
	apply func(value []byte)
	log   *slog.Logger
}

// maxWatchBackoff bounds the wait before following etcd again.
const maxWatchBackoff = 30 * time.Second

func (f keyFollower) Start(ctx context.Context) error {
	backoff := time.Second
	for {
		rev, err := f.sync(ctx)
		if err == nil {
			backoff = time.Second
			err = f.follow(ctx, rev+1)
		}
		if ctx.Err() != nil {
			return nil
		}
		f.log.Warn("cannot follow the cluster's "+f.what+" in etcd; retrying", "err", err, "next-try-in", backoff.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxWatchBackoff)
	}
}

// sync applies the value etcd has now and returns etcd's revision.
func (f keyFollower) sync(ctx context.Context) (int64, error) {
	resp, err := f.store.Get(ctx, f.key)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) > 0 {
		f.apply(resp.Kvs[0].Value)
	}
	return resp.Header.Revision, nil
}

// follow applies every new value from revision rev on, until the watch
// fails or ctx ends.
func (f keyFollower) follow(ctx context.Context, rev int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range f.store.Watch(ctx, f.key, clientv3.WithRev(rev)) {
		if err := resp.Err(); err != nil {
			return err
		}
		for _, ev := range resp.Events {
			if ev.Type == mvccpb.PUT {
				f.apply(ev.Kv.Value)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the watch of the %s ended", f.what)
}
