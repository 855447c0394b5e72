package routing

import (
	"net"
	"net/http"
	"path"
	"sort"
	"strings"
)

// Table routes the requests of one listening port. It is built whole by
// NewTable and never changed after: the proxy swaps in a new one.
type Table struct {
	exact    map[string][]*Rule
	wildcard []*wildcard // longest suffix first
	any      []*Rule
	fallback *Rule
	claimed  []string // hosts the fallback does not answer
}

type wildcard struct {
	suffix   string // ".example" of "*.example"
	oneLabel bool
	rules    []*Rule
}

// NewTable indexes rules by host and sorts them; fallback (may be nil)
// answers what no rule matches.
func NewTable(rules []*Rule, fallback *Rule) *Table {
	t := &Table{exact: map[string][]*Rule{}, fallback: fallback}
	type wildKey struct {
		suffix   string
		oneLabel bool
	}
	wild := map[wildKey]*wildcard{}
	for _, r := range rules {
		host := strings.ToLower(r.Host)
		switch {
		case host == "":
			t.any = append(t.any, r)
		case strings.HasPrefix(host, "*."):
			k := wildKey{suffix: host[1:], oneLabel: r.OneLabel}
			w := wild[k]
			if w == nil {
				w = &wildcard{suffix: k.suffix, oneLabel: k.oneLabel}
				wild[k] = w
				t.wildcard = append(t.wildcard, w)
			}
			w.rules = append(w.rules, r)
		default:
			t.exact[host] = append(t.exact[host], r)
		}
	}
	for _, rs := range t.exact {
		Sort(rs)
	}
	for _, w := range t.wildcard {
		Sort(w.rules)
	}
	sort.SliceStable(t.wildcard, func(i, j int) bool {
		a, b := t.wildcard[i], t.wildcard[j]
		if len(a.suffix) != len(b.suffix) {
			return len(a.suffix) > len(b.suffix)
		}
		return a.oneLabel && !b.oneLabel
	})
	Sort(t.any)
	return t
}

// WithoutFallbackFor keeps the fallback from answering requests for
// hosts (exact, "*.domain" for one or more labels, "" for all): on a
// port that Gateway listeners share with Ingresses, what the listeners'
// routes do not match is 404, not an Ingress's default backend. Call it
// before the table is used.
func (t *Table) WithoutFallbackFor(hosts []string) *Table {
	t.claimed = hosts
	return t
}

// Match finds the rule of a request; nil when nothing matches and there
// is no fallback.
func (t *Table) Match(r *http.Request) *Rule {
	host := strings.ToLower(strings.TrimSuffix(HostOf(r), "."))
	p := CleanPath(r.URL.Path)
	if rl := first(t.exact[host], r, p); rl != nil {
		return rl
	}
	for _, w := range t.wildcard {
		label, ok := strings.CutSuffix(host, w.suffix)
		if !ok || label == "" || (w.oneLabel && strings.Contains(label, ".")) {
			continue
		}
		if rl := first(w.rules, r, p); rl != nil {
			return rl
		}
	}
	if rl := first(t.any, r, p); rl != nil {
		return rl
	}
	if t.claims(host) {
		return nil
	}
	return t.fallback
}

func (t *Table) claims(host string) bool {
	for _, h := range t.claimed {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if label, ok := strings.CutSuffix(host, suffix); ok && label != "" {
				return true
			}
		} else if h == "" || h == host {
			return true
		}
	}
	return false
}

func first(rs []*Rule, r *http.Request, p string) *Rule {
	for _, rl := range rs {
		if rl.matches(r, p) {
			return rl
		}
	}
	return nil
}

// HostOf is the request's host without its port.
func HostOf(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		return h
	}
	return r.Host
}

// CleanPath is the path requests are routed by: "//" and "/./" folded and
// "/x/.." resolved, as nginx normalises it, so "/public/../admin" is not
// routed by a /public rule; a trailing slash stays.
func CleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
