package replicaset

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// expectationsTimeout is how long a controller waits for the watch events
// of its own creates and deletes before it syncs anyway (in case an event
// was lost).
const expectationsTimeout = 5 * time.Minute

// expectations records, per owner key, how many pod creations and which pod
// deletions the controller has asked for and not yet seen in the informer.
// Until they are seen (or expire) the owner is not resized again, so the
// informer's lag never makes it create or delete twice.
type expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expectation
}

type expectation struct {
	adds    int
	deletes map[string]bool // pod keys ("ns/name") still to be seen deleted
	at      time.Time
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, m: map[string]*expectation{}}
}

// satisfied reports whether key may be resized: nothing is pending, or the
// pending events are overdue.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	if x.adds <= 0 && len(x.deletes) == 0 {
		return true
	}
	return e.clock.Since(x.at) > expectationsTimeout
}

// expectCreations replaces key's expectations with n creations.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{adds: n, at: e.clock.Now()}
}

// expectDeletions replaces key's expectations with the deletion of pods.
func (e *expectations) expectDeletions(key string, pods []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{deletes: make(map[string]bool, len(pods)), at: e.clock.Now()}
	for _, p := range pods {
		x.deletes[p] = true
	}
	e.m[key] = x
}

// creationObserved counts one expected creation as seen (or as never to
// be seen: a create that failed or was skipped).
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.adds--
	}
}

// deletionObserved counts the deletion of pod as seen, if it was expected;
// the deletion of the same pod is counted once however many events show it.
func (e *expectations) deletionObserved(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletes, pod)
	}
}

// delete forgets key.
func (e *expectations) delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// pending returns key's outstanding creations and deletions (for tests).
func (e *expectations) pending(key string) (adds, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		return x.adds, len(x.deletes)
	}
	return 0, 0
}
