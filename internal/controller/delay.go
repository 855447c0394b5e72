package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Delayer adds a key to the queue after a delay measured on the injected
// clock, so that time-based re-checks (minReadySeconds) follow a fake clock
// in tests. Retries after errors stay on the queue's own rate limiter.
// Only the earliest pending re-check of a key is kept.
type Delayer struct {
	clock clock.Clock
	add   func(string)
	done  <-chan struct{}
	mu    sync.Mutex
	due   map[string]time.Time
}

// NewDelayer returns a Delayer that calls add (a queue's Add) until done closes.
func NewDelayer(c clock.Clock, add func(string), done <-chan struct{}) *Delayer {
	return &Delayer{clock: c, add: add, done: done, due: map[string]time.Time{}}
}

// After adds key once delay has passed.
func (d *Delayer) After(key string, delay time.Duration) {
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
