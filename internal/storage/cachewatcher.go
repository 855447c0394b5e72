package storage

// watcherBuffer is how many live events a watcher may have queued before it is
// considered too slow and ended (the client then resumes from its last revision).
const watcherBuffer = 1000

// cacheWatcher delivers a backlog and then live events to one consumer.
type cacheWatcher struct {
	in      chan CachedEvent
	done    chan error
	out     chan CachedEvent
	minimum int64 // live events at or below this revision were already covered
}

func newCacheWatcher(backlog []CachedEvent, after int64) *cacheWatcher {
	w := &cacheWatcher{
		in:   make(chan CachedEvent, watcherBuffer),
		done: make(chan error, 1),
		out:  make(chan CachedEvent),
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
	select {
	case w.in <- ev:
		return true
	default:
		return false
	}
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
		select {
		case ev := <-w.in:
			select {
			case w.out <- ev:
			case err := <-w.done:
				w.finish(err)
				return
			}
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
