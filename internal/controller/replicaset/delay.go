package replicaset

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// delayer adds a key to the queue after a delay measured on the injected
// clock, so that time-based re-checks (minReadySeconds) follow a fake clock
// in tests. Retries after errors stay on the queue's own rate limiter.
// Only the earliest pending re-check of a key is kept.
type delayer struct {
	clock clock.Clock
	add   func(string)
	done  <-chan struct{}
	mu    sync.Mutex
	due   map[string]time.Time
}

func newDelayer(c clock.Clock, add func(string), done <-chan struct{}) *delayer {
	return &delayer{clock: c, add: add, done: done, due: map[string]time.Time{}}
}

// after adds key once d has passed.
func (d *delayer) after(key string, delay time.Duration) {
	if delay <= 0 {
		d.add(key)
		return
	}
	at := d.clock.Now().Add(delay)
	d.mu.Lock()
	if cur, ok := d.due[key]; ok && !cur.After(at) {
		d.mu.Unlock()
		return
	}
	d.due[key] = at
	d.mu.Unlock()
	t := d.clock.NewTimer(delay)
	go func() {
		select {
		case <-t.C():
		case <-d.done:
			t.Stop()
			return
		}
		d.mu.Lock()
		if d.due[key].Equal(at) {
			delete(d.due, key)
		}
		d.mu.Unlock()
		d.add(key)
	}()
}
