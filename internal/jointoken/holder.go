package jointoken

import "sync/atomic"

// Current is what a server accepts at a moment: the full tokens and
// their secrets.
type Current struct {
	Server, Agent             string
	ServerSecret, AgentSecret string
}

// Holder hands the join handler the current tokens; Store swaps them
// while requests are served.
type Holder struct {
	cur atomic.Pointer[Current]
}

// NewHolder returns a Holder of r's tokens.
func NewHolder(r Record) (*Holder, error) {
	h := &Holder{}
	if _, err := h.Store(r); err != nil {
		return nil, err
	}
	return h, nil
}

// Load returns the current tokens.
func (h *Holder) Load() Current { return *h.cur.Load() }

// Store makes r's tokens the current ones and reports whether they
// changed. A record without two valid, different tokens is refused and
// the current ones stay.
func (h *Holder) Store(r Record) (changed bool, err error) {
	if err := r.check(); err != nil {
		return false, err
	}
	server, agent, _ := r.Secrets()
	next := &Current{Server: r.Server, Agent: r.Agent, ServerSecret: server, AgentSecret: agent}
	old := h.cur.Swap(next)
	return old == nil || *old != *next, nil
}
