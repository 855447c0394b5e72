package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long a controller waits for the watch events
// of its own creates and deletes before it acts again anyway (in case an
// event was lost).
const ExpectationsTimeout = 5 * time.Minute

// Expectations records, per owner key, how many pod creations and which pod
// deletions a controller has asked for and not yet seen in its informer.
// Until they are seen (or ExpectationsTimeout passes) the owner's pods are
// not changed again, so the informer's lag never makes it create or delete
// twice. It is safe for concurrent use.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expected
}

// expected is what one owner waits for.
type expected struct {
	creates int
	deletes map[string]bool // pod keys ("ns/name") not yet seen deleted
	at      time.Time
}

// NewExpectations returns empty Expectations that measure their timeout on c.
func NewExpectations(c clock.PassiveClock) *Expectations {
	return &Expectations{clock: c, m: map[string]*expected{}}
}

// Satisfied reports whether the owner key may be changed again: nothing is
// pending for it, or what is pending is overdue.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.creates <= 0 && len(x.deletes) == 0) {
		return true
	}
	return e.clock.Since(x.at) > ExpectationsTimeout
}

// Expect replaces key's expectations with creates creations and the
// deletion of the pods with the given keys.
func (e *Expectations) Expect(key string, creates int, deletes []string) {
	x := &expected{creates: creates, deletes: make(map[string]bool, len(deletes)), at: e.clock.Now()}
	for _, d := range deletes {
		x.deletes[d] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = x
}

// CreationObserved counts one expected creation as seen (or as never to be
// seen: a create that failed or was skipped).
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.creates--
	}
}

// DeletionObserved counts the deletion of the pod with key pod as seen, if
// it was expected; however many events show it, it counts once.
func (e *Expectations) DeletionObserved(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletes, pod)
	}
}

// Forget drops key (its owner is gone; a new one of the same name starts
// clean).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// Pending returns key's outstanding creations and deletions.
func (e *Expectations) Pending(key string) (creates, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		return x.creates, len(x.deletes)
	}
	return 0, 0
}
