package endpointslice

import (
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// pendingTimeout bounds how long a write is waited for (a slice created and
// deleted by someone else before the informer saw it is never seen).
const pendingTimeout = 30 * time.Second

// pendingWrites remembers, per service, the slices this controller created
// or deleted that its informer has not shown yet.
type pendingWrites struct {
	mu      sync.Mutex
	creates map[string]map[string]time.Time
	deletes map[string]map[string]time.Time
}

func (p *pendingWrites) created(service, slice string) { p.add(&p.creates, service, slice) }
func (p *pendingWrites) deleted(service, slice string) { p.add(&p.deletes, service, slice) }

func (p *pendingWrites) add(m *map[string]map[string]time.Time, service, slice string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if *m == nil {
		*m = map[string]map[string]time.Time{}
	}
	if (*m)[service] == nil {
		(*m)[service] = map[string]time.Time{}
	}
	(*m)[service][slice] = time.Now()
}

// seen forgets the writes that listed shows (or that are too old) and
// reports whether none is left.
func (p *pendingWrites) seen(service string, listed []*discoveryv1.EndpointSlice) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	present := map[string]bool{}
	for _, s := range listed {
		present[s.Name] = true
	}
	for name, at := range p.creates[service] {
		if present[name] || time.Since(at) > pendingTimeout {
			delete(p.creates[service], name)
		}
	}
	for name, at := range p.deletes[service] {
		if !present[name] || time.Since(at) > pendingTimeout {
			delete(p.deletes[service], name)
		}
	}
	return len(p.creates[service]) == 0 && len(p.deletes[service]) == 0
}
