package job

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// expectationsTimeout is how long a job waits for the watch events of its
// own creates and deletes before it is synced as if they had arrived.
const expectationsTimeout = 5 * time.Minute

// expectations records, per job key, how many pod creations and deletions
// the controller asked for and has not yet seen in the informer, and which
// pods it removed the tracking finalizer from without seeing it gone. Until
// the creates and deletes are seen the job is not resized again, and a pod
// whose finalizer removal is pending is not counted twice.
type expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	pods  map[string]*podExpectation
	uids  map[string]sets.Set[string]
}

type podExpectation struct {
	adds, deletes int
	at            time.Time
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, pods: map[string]*podExpectation{}, uids: map[string]sets.Set[string]{}}
}

// satisfied reports whether key may be resized.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.pods[key]
	return !ok || (x.adds <= 0 && x.deletes <= 0) || e.clock.Since(x.at) > expectationsTimeout
}

// expect replaces key's pod expectations.
func (e *expectations) expect(key string, adds, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pods[key] = &podExpectation{adds: adds, deletes: deletes, at: e.clock.Now()}
}

func (e *expectations) creationObserved(key string) {
	e.observe(key, func(x *podExpectation) { x.adds-- })
}
func (e *expectations) deletionObserved(key string) {
	e.observe(key, func(x *podExpectation) { x.deletes-- })
}

func (e *expectations) observe(key string, fn func(*podExpectation)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.pods[key]; ok {
		fn(x)
	}
}

// expectFinalizerRemovals records pods whose finalizer is being removed.
func (e *expectations) expectFinalizerRemovals(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.uids[key] == nil {
		e.uids[key] = sets.New[string]()
	}
	e.uids[key].Insert(uids...)
}

// finalizerRemovalObserved records that the pod's finalizer is gone (or the
// removal failed and will not be seen).
func (e *expectations) finalizerRemovalObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.uids[key].Delete(uid)
}

// pendingFinalizerRemovals returns a copy of the UIDs still expected.
func (e *expectations) pendingFinalizerRemovals(key string) sets.Set[string] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.uids[key].Clone()
}

// forget drops everything about key.
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pods, key)
	delete(e.uids, key)
}
