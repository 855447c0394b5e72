package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Etcd stores values in etcd through a clientv3 client.
type Etcd struct {
	client *clientv3.Client
}

var _ Interface = (*Etcd)(nil)

// NewEtcd returns a store over client.
func NewEtcd(client *clientv3.Client) *Etcd { return &Etcd{client: client} }

// Get implements Interface.
func (e *Etcd) Get(ctx context.Context, key string) (KeyValue, error) {
	resp, err := e.client.Get(ctx, key)
	if err != nil {
		return KeyValue{}, fmt.Errorf("etcd get %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return KeyValue{}, fmt.Errorf("%q: %w", key, ErrNotFound)
	}
	return fromEtcd(resp.Kvs[0]), nil
}

// Create implements Interface.
func (e *Etcd) Create(ctx context.Context, key string, value []byte) (int64, error) {
	resp, err := e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd create %q: %w", key, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%q: %w", key, ErrExists)
	}
	return resp.Header.Revision, nil
}

// Update implements Interface.
func (e *Etcd) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	resp, err := e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expectedRevision)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd update %q: %w", key, err)
	}
	if !resp.Succeeded {
		if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return 0, fmt.Errorf("%q: %w", key, ErrNotFound)
		}
		return 0, fmt.Errorf("%q: %w", key, ErrConflict)
	}
	return resp.Header.Revision, nil
}

// Delete implements Interface.
func (e *Etcd) Delete(ctx context.Context, key string, expectedRevision int64) (KeyValue, error) {
	cmp := clientv3.Compare(clientv3.ModRevision(key), ">", 0)
	if expectedRevision > 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", expectedRevision)
	}
	resp, err := e.client.Txn(ctx).
		If(cmp).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return KeyValue{}, fmt.Errorf("etcd delete %q: %w", key, err)
	}
	if !resp.Succeeded {
		if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return KeyValue{}, fmt.Errorf("%q: %w", key, ErrNotFound)
		}
		return KeyValue{}, fmt.Errorf("%q: %w", key, ErrConflict)
	}
	prev := resp.Responses[0].GetResponseDeleteRange().PrevKvs
	if len(prev) == 0 {
		return KeyValue{}, fmt.Errorf("%q: %w", key, ErrNotFound)
	}
	kv := fromEtcd(prev[0])
	kv.Revision = resp.Header.Revision
	return kv, nil
}

// List implements Interface.
func (e *Etcd) List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error) {
	start := prefix
	if opts.StartKey != "" {
		start = opts.StartKey
	}
	ops := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	resp, err := e.client.Get(ctx, start, ops...)
	if err != nil {
		return ListResult{}, fmt.Errorf("etcd list %q: %w", prefix, mapEtcdError(err))
	}
	out := ListResult{Revision: resp.Header.Revision, KVs: make([]KeyValue, 0, len(resp.Kvs))}
	if opts.Revision > 0 {
		out.Revision = opts.Revision
	}
	for _, kv := range resp.Kvs {
		out.KVs = append(out.KVs, fromEtcd(kv))
	}
	out.More = resp.More
	if resp.More {
		out.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return out, nil
}

// Watch implements Interface. The etcd watch starts at fromRevision itself
// and the events of that revision, which the caller has already seen, are
// dropped: etcd answers a progress request only when every watch on the
// stream has started, and a watch asked to start at the next revision
// (fromRevision+1) has not until something is written. All watches share
// one stream, so a single one opened at the current revision would stall
// the progress every quiet cache waits for.
func (e *Etcd) Watch(ctx context.Context, prefix string, fromRevision int64) <-chan Event {
	out := make(chan Event, 100)
	go func() {
		defer close(out)
		ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		defer cancel()
		start := max(fromRevision, 1)
		wch := e.client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(start), clientv3.WithPrevKV())
		for {
			var resp clientv3.WatchResponse
			var ok bool
			select {
			case <-ctx.Done():
				return
			case resp, ok = <-wch:
			}
			if !ok {
				break
			}
			if resp.CompactRevision == fromRevision+1 && start == fromRevision {
				// Compacted up to the first revision the caller needs:
				// that one is still there, so start at it after all.
				start = fromRevision + 1
				wch = e.client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(start), clientv3.WithPrevKV())
				continue
			}
			if err := resp.Err(); err != nil {
				send(ctx, out, Event{Type: Error, Err: fmt.Errorf("etcd watch %q: %w", prefix, mapEtcdError(err))})
				return
			}
			if resp.IsProgressNotify() {
				if !send(ctx, out, Event{Type: Progress, KV: KeyValue{Revision: resp.Header.Revision}}) {
					return
				}
				continue
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision <= fromRevision {
					continue
				}
				if !send(ctx, out, toEvent(ev)) {
					return
				}
			}
		}
		if ctx.Err() == nil {
			send(ctx, out, Event{Type: Error, Err: fmt.Errorf("etcd watch %q ended", prefix)})
		}
	}()
	return out
}

// CurrentRevision implements Interface.
func (e *Etcd) CurrentRevision(ctx context.Context) (int64, error) {
	resp, err := e.client.Get(ctx, "/", clientv3.WithCountOnly(), clientv3.WithLimit(1))
	if err != nil {
		return 0, fmt.Errorf("etcd revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// RequestProgress implements Interface.
func (e *Etcd) RequestProgress(ctx context.Context) error {
	// Watches share the stream of their context's metadata; Watch adds
	// "require leader", so the request must too.
	return e.client.RequestProgress(clientv3.WithRequireLeader(ctx))
}

// Compact discards history older than revision.
func (e *Etcd) Compact(ctx context.Context, revision int64) error {
	_, err := e.client.Compact(ctx, revision)
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("etcd compact to %d: %w", revision, err)
	}
	return nil
}

// RunCompactor compacts every interval to the revision seen one interval
// earlier, so history stays available for at least one interval. It blocks
// until ctx ends.
func (e *Etcd) RunCompactor(ctx context.Context, interval time.Duration, log *slog.Logger) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if last > 0 {
			if err := e.Compact(ctx, last); err != nil {
				log.Warn("compaction failed", "revision", last, "err", err)
			} else {
				log.Debug("compacted", "revision", last)
			}
		}
		rev, err := e.CurrentRevision(ctx)
		if err == nil {
			last = rev
		}
	}
}

func send(ctx context.Context, out chan<- Event, ev Event) bool {
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func fromEtcd(kv *mvccpb.KeyValue) KeyValue {
	return KeyValue{Key: string(kv.Key), Value: kv.Value, Revision: kv.ModRevision}
}

func toEvent(ev *clientv3.Event) Event {
	kv := fromEtcd(ev.Kv)
	var prev *KeyValue
	if ev.PrevKv != nil {
		p := fromEtcd(ev.PrevKv)
		prev = &p
	}
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		if prev != nil {
			kv.Value = prev.Value
		}
		return Event{Type: Deleted, KV: kv, Prev: prev}
	case ev.IsCreate():
		return Event{Type: Added, KV: kv}
	default:
		return Event{Type: Modified, KV: kv, Prev: prev}
	}
}

func mapEtcdError(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", ErrFuture, err)
	}
	return err
}
