package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Object is a decoded value in the cache.
type Object struct {
	Key      string
	Revision int64
	Value    any
}

// CachedEvent is a change seen by the cache, with decoded values. Prev is the
// value before a modification or deletion; Bookmark events carry only Revision.
type CachedEvent struct {
	Type     EventType
	Key      string
	Revision int64
	Value    any
	Prev     any
	Err      error
}

// Bookmark is the event type that says "the stream has reached Revision".
const Bookmark EventType = "BOOKMARK"

// Decoder turns a stored value into the object the cache keeps. It must not
// keep kv.Value. Deleted objects are decoded from their last value with the
// revision of the deletion.
type Decoder func(kv KeyValue) (any, error)

// Cache keeps everything under one prefix in memory, fed by a single watch on
// the store, and serves lists and any number of watches from it.
type Cache struct {
	store   Interface
	prefix  string
	decode  Decoder
	log     *slog.Logger
	history int

	mu       sync.Mutex
	changed  *sync.Cond
	items    map[string]Object
	revision int64         // everything up to here is applied
	events   []CachedEvent // recent events, oldest first
	oldest   int64         // watches may start at any revision >= oldest
	watchers map[*cacheWatcher]struct{}
	ready    bool
}

// NewCache returns a cache over the keys under prefix, keeping the last
// history events for watchers that resume.
func NewCache(store Interface, prefix string, decode Decoder, history int, log *slog.Logger) *Cache {
	c := &Cache{store: store, prefix: prefix, decode: decode, log: log, history: history,
		items: map[string]Object{}, watchers: map[*cacheWatcher]struct{}{}}
	c.changed = sync.NewCond(&c.mu)
	return c
}

// Start fills the cache and follows the store until ctx ends, re-listing
// whenever the underlying watch fails.
func (c *Cache) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		c.mu.Lock()
		c.changed.Broadcast()
		c.mu.Unlock()
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.listAndWatch(ctx)
		if ctx.Err() != nil {
			break
		}
		c.log.Warn("watch cache restarting", "prefix", c.prefix, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	c.mu.Lock()
	c.closeWatchersLocked(nil)
	c.mu.Unlock()
	return nil
}

func (c *Cache) listAndWatch(ctx context.Context) error {
	list, err := c.store.List(ctx, c.prefix, ListOptions{})
	if err != nil {
		return err
	}
	items := make(map[string]Object, len(list.KVs))
	for _, kv := range list.KVs {
		obj, err := c.decode(kv)
		if err != nil {
			c.log.Error("cannot decode stored object; leaving it out", "key", kv.Key, "err", err)
			continue
		}
		items[kv.Key] = Object{Key: kv.Key, Revision: kv.Revision, Value: obj}
	}
	c.mu.Lock()
	c.closeWatchersLocked(errors.New("watch cache re-listed"))
	c.items, c.revision, c.oldest, c.events, c.ready = items, list.Revision, list.Revision, nil, true
	c.changed.Broadcast()
	c.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for ev := range c.store.Watch(ctx, c.prefix, list.Revision) {
		switch ev.Type {
		case Error:
			return ev.Err
		case Progress:
			c.progress(ev.KV.Revision)
		default:
			c.apply(ev)
		}
	}
	return ctx.Err()
}

func (c *Cache) apply(ev Event) {
	obj, err := c.decode(ev.KV)
	if err != nil {
		c.log.Error("cannot decode stored object; skipping the change", "key", ev.KV.Key, "err", err)
		c.mu.Lock()
		c.revision = max(c.revision, ev.KV.Revision)
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ce := CachedEvent{Type: ev.Type, Key: ev.KV.Key, Revision: ev.KV.Revision, Value: obj}
	if prev, ok := c.items[ev.KV.Key]; ok {
		ce.Prev = prev.Value
	}
	if ev.Type == Deleted {
		delete(c.items, ev.KV.Key)
	} else {
		c.items[ev.KV.Key] = Object{Key: ev.KV.Key, Revision: ev.KV.Revision, Value: obj}
	}
	c.revision = ev.KV.Revision
	c.events = append(c.events, ce)
	if len(c.events) > c.history {
		dropped := len(c.events) - c.history
		c.oldest = c.events[dropped-1].Revision
		c.events = append(c.events[:0:0], c.events[dropped:]...)
	}
	for w := range c.watchers {
		if !w.offer(ce) {
			delete(c.watchers, w)
			w.end(errors.New("watcher fell behind"))
		}
	}
	c.changed.Broadcast()
}

// progress records that nothing under the prefix changed up to revision.
func (c *Cache) progress(revision int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if revision > c.revision {
		c.revision = revision
		c.changed.Broadcast()
	}
}

// freshnessTimeout bounds how long a read waits for the cache to reach the
// revision it asks for. Upstream waits 3 s; on a loaded two-core node
// etcd's progress notices can take longer, and a slow answer beats a
// failed one.
const freshnessTimeout = 10 * time.Second

// waitLocked waits until the cache has applied revision (or ctx ends). A
// quiet prefix sees no events, so while waiting it asks the store for
// progress notices every 50ms.
func (c *Cache) waitLocked(ctx context.Context, revision int64) error {
	if c.ready && c.revision < revision {
		stop := make(chan struct{})
		defer close(stop)
		go c.requestProgress(ctx, stop)
	}
	for !c.ready || c.revision < revision {
		if ctx.Err() != nil {
			return fmt.Errorf("watch cache of %q at revision %d, waiting for %d: %w", c.prefix, c.revision, revision, ctx.Err())
		}
		c.changed.Wait()
	}
	return nil
}

func (c *Cache) requestProgress(ctx context.Context, stop <-chan struct{}) {
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		if err := c.store.RequestProgress(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("cannot request watch progress", "err", err)
		}
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// List returns the objects whose keys start with prefix once the cache has
// reached minRevision (0: as soon as it is filled), sorted by key, and the
// revision it reflects.
func (c *Cache) List(ctx context.Context, minRevision int64, prefix string) ([]Object, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, freshnessTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.mu.Lock(); c.changed.Broadcast(); c.mu.Unlock() })
	defer stop()
	c.mu.Lock()
	if err := c.waitLocked(ctx, minRevision); err != nil {
		c.mu.Unlock()
		return nil, 0, err
	}
	out, revision := c.collectLocked(prefix), c.revision
	c.mu.Unlock()
	sortByKey(out) // outside the lock: watchers wait on it
	return out, revision, nil
}

// collectLocked copies the objects under prefix, unsorted.
func (c *Cache) collectLocked(prefix string) []Object {
	var out []Object
	for key, o := range c.items {
		if strings.HasPrefix(key, prefix) {
			out = append(out, o)
		}
	}
	return out
}

func sortByKey(objects []Object) {
	sort.Slice(objects, func(i, j int) bool { return objects[i].Key < objects[j].Key })
}

// Get returns the cached object under key, if the cache has it.
func (c *Cache) Get(key string) (Object, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.items[key]
	return o, ok
}

// Revision returns the revision the cache has applied.
func (c *Cache) Revision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revision
}

// WatchOptions says where a watch starts.
type WatchOptions struct {
	// Revision: changes after it are sent. Ignored when Initial is set.
	Revision int64
	// Initial sends the current state as Added events first, then changes.
	// MinRevision makes the initial state at least that new.
	Initial     bool
	MinRevision int64
	// InitialBookmark sends a Bookmark right after the initial events.
	InitialBookmark bool
}

// Watch streams events from the cache until ctx ends or the watcher falls
// behind. A revision older than the cache's history gets ErrCompacted.
func (c *Cache) Watch(ctx context.Context, opts WatchOptions) (<-chan CachedEvent, error) {
	waitCtx, cancel := context.WithTimeout(ctx, freshnessTimeout)
	defer cancel()
	stop := context.AfterFunc(waitCtx, func() { c.mu.Lock(); c.changed.Broadcast(); c.mu.Unlock() })
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitLocked(waitCtx, opts.MinRevision); err != nil {
		return nil, err
	}
	var backlog []CachedEvent
	switch {
	case opts.Initial:
		initial := c.collectLocked(c.prefix)
		sortByKey(initial)
		for _, o := range initial {
			backlog = append(backlog, CachedEvent{Type: Added, Key: o.Key, Revision: o.Revision, Value: o.Value})
		}
		if opts.InitialBookmark {
			backlog = append(backlog, CachedEvent{Type: Bookmark, Revision: c.revision})
		}
	case opts.Revision < c.oldest:
		return nil, fmt.Errorf("revision %d is older than the oldest kept (%d): %w", opts.Revision, c.oldest, ErrCompacted)
	default:
		for _, ev := range c.events {
			if ev.Revision > opts.Revision {
				backlog = append(backlog, ev)
			}
		}
	}
	w := newCacheWatcher(backlog, opts.Revision)
	c.watchers[w] = struct{}{}
	go func() {
		<-ctx.Done()
		c.mu.Lock()
		if _, ok := c.watchers[w]; ok {
			delete(c.watchers, w)
			w.end(nil)
		}
		c.mu.Unlock()
	}()
	return w.out, nil
}

func (c *Cache) closeWatchersLocked(err error) {
	for w := range c.watchers {
		delete(c.watchers, w)
		w.end(err)
	}
}
