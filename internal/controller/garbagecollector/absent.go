package garbagecollector

import (
	"container/list"
	"sync"
)

// absentOwnerCacheSize is how many owners known not to exist are remembered,
// as upstream.
const absentOwnerCacheSize = 500

// referenceCache is a small LRU set of object references: the owners the
// apiserver said do not exist, so dependents naming them need no lookup.
type referenceCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front is most recently used
	items map[objectReference]*list.Element
}

func newReferenceCache(max int) *referenceCache {
	return &referenceCache{max: max, order: list.New(), items: map[objectReference]*list.Element{}}
}

// Add records ref, dropping the least recently used entry when full.
func (c *referenceCache) Add(ref objectReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[ref]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[ref] = c.order.PushFront(ref)
	if c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(objectReference))
	}
}

// Has reports whether ref was recorded (and marks it recently used).
func (c *referenceCache) Has(ref objectReference) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[ref]
	if ok {
		c.order.MoveToFront(e)
	}
	return ok
}
