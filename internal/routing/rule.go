// Package routing is the HTTP routing table of a node's front door: the
// built-in Ingress controller (internal/ingress) and Gateway API's
// HTTPRoutes (internal/gateway) are both turned into Rules, and a Table
// of one listening port picks the Rule of each request.
//
// A Table looks at the request's host first: the rules of the exact host,
// then of wildcard hosts (the longest suffix first), then of rules without
// a host; a host whose rules do not match falls through to the next. In
// each, the first matching Rule in precedence order wins: an Exact path,
// then the longest Prefix, then a method match, then the most header
// matches, then the most query matches, then the lowest Order (the oldest
// object, then its name, then the rule's position), as Gateway API
// specifies and as Ingresses always did. What nothing matches goes to the
// Table's Fallback (an Ingress's defaultBackend), else 404.
package routing

import (
	"net/http"
	"sort"
	"strings"
)

// Rule is one way through the front door: what a request must look like
// (Host, Path, Method, Headers, Query) and what is done with it (Filters,
// then one of Backends by weight).
type Rule struct {
	// Host is "" (any host), "a.example" or a wildcard "*.example".
	Host string
	// OneLabel makes a wildcard match exactly one more label, as an
	// Ingress's; else it matches one or more (Gateway API).
	OneLabel bool
	// Path is matched as Exact or by path elements (Prefix).
	Path  string
	Exact bool
	// Method, when set, must equal the request's.
	Method string
	// Headers (names case-insensitive) and Query parameters must all be
	// present with exactly these values.
	Headers []Pair
	Query   []Pair
	Filters Filters
	// Backends get requests in proportion to their weights; with none, or
	// no weight, the answer is 500 (unless a redirect answers first).
	Backends []Weighted
	// Source is the object the rule comes from, for metrics and logs.
	Source Source
	// Order breaks ties between rules of equal precedence: lower first.
	Order int
}

// Source names an object rules come from.
type Source struct {
	Kind string // "Ingress" or "HTTPRoute"
	Name string // namespace/name
}

// Pair is a name and the value it must have.
type Pair struct{ Name, Value string }

// Weighted is a backend and its share of the requests.
type Weighted struct {
	*Backend
	Weight int32
}

// Backend is a Service port and its endpoints at the time of the table.
type Backend struct {
	Service   string   // namespace/name:port
	Endpoints []string // "ip:port", ready ones (serving terminating ones when none is ready)
	// Invalid, when set, says why requests sent here get 500 (a Service
	// of another namespace no ReferenceGrant allows, a kind that is not a
	// Service, …).
	Invalid string
}

// Filters change a request before it is forwarded, or answer it.
type Filters struct {
	RequestHeaders  *HeaderChanges
	ResponseHeaders *HeaderChanges
	Redirect        *Redirect // answers instead of forwarding
	Rewrite         *Rewrite
}

// HeaderChanges set (replace), add (append) and remove headers.
type HeaderChanges struct {
	Set, Add []Pair
	Remove   []string
}

// Apply changes h.
func (c *HeaderChanges) Apply(h http.Header) {
	if c == nil {
		return
	}
	for _, p := range c.Set {
		h.Set(p.Name, p.Value)
	}
	for _, p := range c.Add {
		h.Add(p.Name, p.Value)
	}
	for _, n := range c.Remove {
		h.Del(n)
	}
}

// Redirect answers with a redirect: the request's URL with the fields
// set here replaced. Port 0 derives the port as Gateway API says (the
// scheme's well-known port when Scheme is set, else the listener's).
type Redirect struct {
	Scheme, Host string
	Port         int32
	Path         *PathChange
	Code         int // 302 when 0
}

// Rewrite changes the request's host and path before it is forwarded.
type Rewrite struct {
	Host string
	Path *PathChange
}

// PathChange replaces the whole path (Full) or the part the rule's
// Prefix matched (Prefix).
type PathChange struct {
	Prefix bool
	Value  string
}

// NewPath is path changed by c, for a rule matching prefix.
func (c *PathChange) NewPath(path, prefix string) string {
	if c == nil {
		return path
	}
	if !c.Prefix {
		return c.Value
	}
	prefix = strings.TrimSuffix(prefix, "/")
	rest := strings.TrimPrefix(path, prefix) // "" or "/…" (matched by path elements)
	value := strings.TrimSuffix(c.Value, "/")
	switch {
	case value == "" && rest == "":
		return "/"
	case value == "":
		return rest
	case rest == "/" && !strings.HasSuffix(c.Value, "/"):
		return value + "/"
	}
	return value + rest
}

// matches reports whether r (with path already cleaned) matches the
// rule's path, method, headers and query; the host is the Table's job.
func (rl *Rule) matches(r *http.Request, path string) bool {
	if rl.Exact {
		if path != rl.Path {
			return false
		}
	} else if !PrefixMatch(rl.Path, path) {
		return false
	}
	if rl.Method != "" && r.Method != rl.Method {
		return false
	}
	for _, h := range rl.Headers {
		if v, ok := headerValue(r, h.Name); !ok || v != h.Value {
			return false
		}
	}
	if len(rl.Query) > 0 {
		q := r.URL.Query()
		for _, p := range rl.Query {
			if vs, ok := q[p.Name]; !ok || vs[0] != p.Value {
				return false
			}
		}
	}
	return true
}

// headerValue is the value a header match compares: a header sent more
// than once is its values joined by commas (RFC 7230, 3.2.2), and Host
// is the request's host (Go keeps it out of Header).
func headerValue(r *http.Request, name string) (string, bool) {
	if name == "Host" {
		return r.Host, r.Host != ""
	}
	vs := r.Header.Values(name)
	return strings.Join(vs, ","), len(vs) > 0
}

// PrefixMatch is the Prefix match of both APIs: p's path elements are a
// prefix of path's ("/foo" matches "/foo" and "/foo/bar", not "/foobar");
// a trailing slash in p is ignored.
func PrefixMatch(p, path string) bool {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return true
	}
	return path == p || strings.HasPrefix(path, p+"/")
}

// Sort puts rules in precedence order (see the package doc).
func Sort(rs []*Rule) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Exact != b.Exact {
			return a.Exact
		}
		if la, lb := len(strings.TrimSuffix(a.Path, "/")), len(strings.TrimSuffix(b.Path, "/")); la != lb {
			return la > lb
		}
		if (a.Method != "") != (b.Method != "") {
			return a.Method != ""
		}
		if len(a.Headers) != len(b.Headers) {
			return len(a.Headers) > len(b.Headers)
		}
		if len(a.Query) != len(b.Query) {
			return len(a.Query) > len(b.Query)
		}
		return a.Order < b.Order
	})
}
