package server

import (
	"sync"
	"time"
)

// reviewCache keeps the apiserver's answers (TokenReviews,
// SubjectAccessReviews) for a while, keyed by a hash of the question. It
// holds at most max entries: when full, expired entries go first, then
// arbitrary ones.
type reviewCache[V any] struct {
	max int

	mu      sync.Mutex
	entries map[[32]byte]cacheEntry[V]
}

type cacheEntry[V any] struct {
	value   V
	expires time.Time
}

func newReviewCache[V any](max int) *reviewCache[V] {
	return &reviewCache[V]{max: max, entries: map[[32]byte]cacheEntry[V]{}}
}

// get returns the answer to key if it has not expired at now.
func (c *reviewCache[V]) get(key [32]byte, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put keeps value for key until now+ttl.
func (c *reviewCache[V]) put(key [32]byte, value V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = cacheEntry[V]{value: value, expires: now.Add(ttl)}
}

// len is the number of entries, expired or not.
func (c *reviewCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
