package dns

import (
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Bounds of cached TTLs, as CoreDNS's cache plugin: answers at most an
// hour, denials at most half an hour.
const (
	maxPositiveTTL = 3600 * time.Second
	maxNegativeTTL = 1800 * time.Second
)

type cacheKey struct {
	name  string // canonical
	qtype uint16
	cd    bool
}

type cacheEntry struct {
	msg     *dns.Msg
	stored  time.Time
	expires time.Time
}

// answerCache keeps upstream answers for their TTL. It holds at most max
// entries; when full it drops an expired entry or else an arbitrary one.
type answerCache struct {
	mu  sync.RWMutex
	m   map[cacheKey]*cacheEntry
	max int
	now func() time.Time
}

func newCache(max int) *answerCache {
	return &answerCache{m: make(map[cacheKey]*cacheEntry), max: max, now: time.Now}
}

func (c *answerCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// get returns a copy of the cached answer with its TTLs aged.
func (c *answerCache) get(k cacheKey) (*dns.Msg, bool) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		c.mu.Lock()
		if c.m[k] == e {
			delete(c.m, k)
		}
		c.mu.Unlock()
		return nil, false
	}
	m := e.msg.Copy()
	age := uint32(now.Sub(e.stored) / time.Second)
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			h := rr.Header()
			h.Ttl = max(h.Ttl, age) - age
		}
	}
	return m, true
}

// put stores m for as long as cacheTTL allows.
func (c *answerCache) put(k cacheKey, m *dns.Msg) {
	ttl := cacheTTL(m)
	if ttl <= 0 || c.max <= 0 {
		return
	}
	now := c.now()
	e := &cacheEntry{msg: m.Copy(), stored: now, expires: now.Add(ttl)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		c.evict(now)
	}
	c.m[k] = e
}

// evict drops one entry, an expired one if a few looks find one. Map
// iteration order is random, so the fallback victim is arbitrary.
func (c *answerCache) evict(now time.Time) {
	var victim cacheKey
	i := 0
	for k, e := range c.m {
		if i == 0 {
			victim = k
		}
		if !now.Before(e.expires) {
			victim = k
			break
		}
		if i++; i >= 8 {
			break
		}
	}
	delete(c.m, victim)
}

// cacheTTL is how long m may be cached: the smallest TTL of its records
// for an answer; for a denial (NXDOMAIN, or NOERROR without answers) the
// SOA's TTL bounded by its MINIMUM (RFC 2308); 0 for anything else.
func cacheTTL(m *dns.Msg) time.Duration {
	if m.Truncated {
		return 0
	}
	var ttl uint32
	var limit time.Duration
	switch {
	case m.Rcode == dns.RcodeSuccess && len(m.Answer) > 0:
		limit = maxPositiveTTL
		ttl = ^uint32(0)
		for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
			for _, rr := range sec {
				if rr.Header().Rrtype != dns.TypeOPT {
					ttl = min(ttl, rr.Header().Ttl)
				}
			}
		}
	case m.Rcode == dns.RcodeNameError || m.Rcode == dns.RcodeSuccess:
		limit = maxNegativeTTL
		for _, rr := range m.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				ttl = min(soa.Hdr.Ttl, soa.Minttl)
				break
			}
		}
	default:
		return 0
	}
	return min(time.Duration(ttl)*time.Second, limit)
}
