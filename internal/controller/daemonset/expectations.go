package daemonset

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// expectationsTimeout is how long the controller waits to see its own
// creates and deletes in the informer before it acts again anyway (in
// case a watch event was lost).
const expectationsTimeout = 5 * time.Minute

// expectations remembers, per DaemonSet key, how many pod creations and
// which pod deletions the controller asked for and has not yet seen in
// the informer. Until they are seen, the DaemonSet's pods are not changed
// again, so the informer's lag never makes it create or delete twice.
type expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expected
}

type expected struct {
	creates int
	deletes map[string]bool // pod keys ("ns/name") not yet seen deleted
	at      time.Time
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, m: map[string]*expected{}}
}

// satisfied: nothing is pending for key, or what is pending is overdue.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.creates <= 0 && len(x.deletes) == 0) {
		return true
	}
	return e.clock.Since(x.at) > expectationsTimeout
}

// expect replaces key's expectations with creates creations and the
// deletion of the pods with the given keys.
func (e *expectations) expect(key string, creates int, deletes []string) {
	x := &expected{creates: creates, deletes: make(map[string]bool, len(deletes)), at: e.clock.Now()}
	for _, d := range deletes {
		x.deletes[d] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = x
}

// created counts one creation as seen (or as never to be seen).
func (e *expectations) created(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.creates--
	}
}

// deleted counts the deletion of pod as seen; seeing it twice is harmless.
func (e *expectations) deleted(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletes, pod)
	}
}

// forget drops key (its DaemonSet is gone; a new one starts clean).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
