package statefulset

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Resources whose writes a sync must see before it acts again.
const (
	resPods         = "pods"
	resClaims       = "persistentvolumeclaims"
	resStatefulSets = "statefulsets"
)

// rvSource reports the newest resourceVersion an informer store has seen
// (cache.Store's LastStoreSyncResourceVersion).
type rvSource interface {
	LastStoreSyncResourceVersion() string
}

// writes makes the controller read its own writes, as upstream's
// StaleControllerConsistencyStatefulSet does: after it creates or updates a
// pod or claim, or writes a set's status, it records the resourceVersion
// the apiserver returned; a sync of that set waits (fails and is retried
// with backoff) until the informer store of each written resource has seen
// at least that version. So a lagging cache never makes it create a pod
// twice or compute status from a stale set.
type writes struct {
	stores map[string]rvSource
	mu     sync.Mutex
	byKey  map[string]*written
}

type written struct {
	uid types.UID
	rv  map[string]string // resource -> newest resourceVersion written
}

// notSeenError says a store has not yet seen a write; the sync is retried.
type notSeenError struct {
	resource, wrote, seen string
}

func (e *notSeenError) Error() string {
	return fmt.Sprintf("waiting for the %s cache to catch up with our own write (wrote resourceVersion %s, cache at %s); retrying", e.resource, e.wrote, e.seen)
}

func newWrites(stores map[string]rvSource) *writes {
	return &writes{stores: stores, byKey: map[string]*written{}}
}

// wrote records that a write for the set with key and uid returned rv.
func (w *writes) wrote(key string, uid types.UID, resource, rv string) {
	if rv == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := w.byKey[key]
	if rec == nil || rec.uid != uid {
		rec = &written{uid: uid, rv: map[string]string{}}
		w.byKey[key] = rec
	}
	if prev, ok := rec.rv[resource]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(prev, rv); err == nil && cmp >= 0 {
			return
		}
	}
	rec.rv[resource] = rv
}

// ready returns nil once every store has seen the writes recorded for key,
// and then forgets them.
func (w *writes) ready(key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := w.byKey[key]
	if rec == nil {
		return nil
	}
	for resource, wrote := range rec.rv {
		store := w.stores[resource]
		if store == nil {
			continue
		}
		seen := store.LastStoreSyncResourceVersion()
		if seen == "" {
			continue
		}
		cmp, err := resourceversion.CompareResourceVersion(wrote, seen)
		if err != nil {
			continue // not comparable: do not wait forever
		}
		if cmp > 0 {
			return &notSeenError{resource: resource, wrote: wrote, seen: seen}
		}
	}
	delete(w.byKey, key)
	return nil
}

// forget drops what was recorded for key.
func (w *writes) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byKey, key)
}
