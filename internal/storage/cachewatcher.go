package storage

import "sync"

// watcherBuffer is how many live events a watcher may have queued before it is
// considered too slow and ended (the client then resumes from its last revision).
const watcherBuffer = 1000

// cacheWatcher delivers a backlog and then live events to one consumer. Live
// events wait in a queue that grows as needed: an idle watch holds no buffer
// (a server has a hundred of them; a channel of watcherBuffer events each
// was a fifth of an idle server's heap).
type cacheWatcher struct {
	mu      sync.Mutex
	queue   []CachedEvent
	queued  chan struct{} // has a token when queue may be non-empty
	done    chan error
	out     chan CachedEvent
	minimum int64 // live events at or below this revision were already covered
}

func newCacheWatcher(backlog []CachedEvent, after int64) *cacheWatcher {
	w := &cacheWatcher{
		queued: make(chan struct{}, 1),
		done:   make(chan error, 1),
		out:    make(chan CachedEvent),
	}
	w.minimum = after
	if n := len(backlog); n > 0 {
		w.minimum = max(w.minimum, backlog[n-1].Revision)
	}
	go w.run(backlog)
	return w
}

// offer queues a live event; false means the watcher is too slow. Called with
// the cache lock held.
func (w *cacheWatcher) offer(ev CachedEvent) bool {
	if ev.Revision <= w.minimum {
		return true
	}
	w.mu.Lock()
	full := len(w.queue) >= watcherBuffer
	if !full {
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	if full {
		return false
	}
	select {
	case w.queued <- struct{}{}:
	default:
	}
	return true
}

// next takes the oldest queued event; the queue's memory goes once it is empty.
func (w *cacheWatcher) next() (CachedEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return CachedEvent{}, false
	}
	ev := w.queue[0]
	w.queue[0] = CachedEvent{}
	w.queue = w.queue[1:]
	if len(w.queue) == 0 {
		w.queue = nil
	}
	return ev, true
}

// end stops the watcher; a non-nil err is sent as a final Error event. Called
// once, with the cache lock held.
func (w *cacheWatcher) end(err error) {
	w.done <- err
}

func (w *cacheWatcher) run(backlog []CachedEvent) {
	defer close(w.out)
	for _, ev := range backlog {
		select {
		case w.out <- ev:
		case err := <-w.done:
			w.finish(err)
			return
		}
	}
	for {
		ev, ok := w.next()
		if !ok {
			select {
			case <-w.queued:
				continue
			case err := <-w.done:
				w.finish(err)
				return
			}
		}
		select {
		case w.out <- ev:
		case err := <-w.done:
			w.finish(err)
			return
		}
	}
}

// finish sends a final Error event if nobody has stopped reading. The consumer
// always drains out until it is closed or stops reading after its ctx ends.
func (w *cacheWatcher) finish(err error) {
	if err == nil {
		return
	}
	select {
	case w.out <- CachedEvent{Type: Error, Err: err}:
	default:
	}
}
