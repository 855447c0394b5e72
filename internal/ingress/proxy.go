package ingress

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is the http.Handler of the Ingress ports: it routes each request
// by the current Table and forwards it straight to an endpoint of the
// Service, with net/http/httputil's reverse proxy (WebSocket upgrades
// included).
type Proxy struct {
	table   atomic.Pointer[Table]
	health  *health
	metrics *Metrics
	rp      *httputil.ReverseProxy
	log     *slog.Logger
}

// Retries is how many other endpoints a request tries after an endpoint
// refused the connection (or could not be reached).
const Retries = 2

// downFor is how long an endpoint that refused a connection is skipped.
const downFor = 10 * time.Second

// NewProxy makes a Proxy with an empty table (every request 404s).
func NewProxy(m *Metrics, log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.Default()
	}
	p := &Proxy{health: newHealth(), metrics: m, log: log}
	p.table.Store(&Table{})
	dialer := &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // long polls and slow backends are theirs
		ExpectContinueTimeout: time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetXForwarded()
			r.Out.Host = r.In.Host // the backend sees the host asked for
			r.Out.URL.Scheme = "http"
		},
		Transport:    &retrying{base: transport, health: p.health},
		ErrorHandler: p.failed,
	}
	return p
}

// SetTable makes t the table of the requests that come after.
func (p *Proxy) SetTable(t *Table) { p.table.Store(t) }

type backendKey struct{}

// ServeHTTP routes and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	b := p.table.Load().Match(host, cleanPath(r.URL.Path))
	if b == nil {
		p.metrics.observe("", "", http.StatusNotFound, start)
		http.Error(w, "404 page not found (no Ingress routes this host and path)", http.StatusNotFound)
		return
	}
	if len(b.Endpoints) == 0 {
		p.metrics.observe(b.Ingress, b.Service, http.StatusServiceUnavailable, start)
		http.Error(w, "503 service unavailable (the Service "+b.Service+" has no ready endpoints)", http.StatusServiceUnavailable)
		return
	}
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	r = r.WithContext(context.WithValue(r.Context(), backendKey{}, b))
	p.rp.ServeHTTP(sw, r)
	p.metrics.observe(b.Ingress, b.Service, sw.code, start)
}

// failed answers a request no endpoint took: 502.
func (p *Proxy) failed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		w.WriteHeader(499) // the client went away, as nginx says it
		return
	}
	p.log.Info("ingress backend failed", "host", r.Host, "path", r.URL.Path, "err", err)
	http.Error(w, "502 bad gateway (no endpoint answered)", http.StatusBadGateway)
}

// retrying sends a request to an endpoint of its backend, and to another
// when the connection could not be made (nothing of the request was sent
// or read, so any request, with a body too, may go again), skipping
// endpoints that recently refused. A failure on a connection that was
// made is the client's answer (502), not retried.
type retrying struct {
	base   http.RoundTripper
	health *health
}

func (t *retrying) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := r.Context().Value(backendKey{}).(*Backend)
	if b == nil {
		return nil, errors.New("ingress: request without a backend")
	}
	var err error
	tried := map[string]bool{}
	for attempt := 0; attempt <= Retries; attempt++ {
		ep := t.health.pick(b, tried)
		if ep == "" {
			break
		}
		tried[ep] = true
		out := r.WithContext(r.Context()) // a shallow copy: the caller's request stays as it was
		u := *r.URL
		u.Host = ep
		out.URL = &u
		if r.Body != nil && r.Body != http.NoBody {
			// The transport closes the body of a request it could not
			// connect for; a retry must still be able to send it (a
			// dial error means none of it was read). The server closes
			// the incoming body when the handler returns.
			out.Body = io.NopCloser(r.Body)
		}
		var resp *http.Response
		resp, err = t.base.RoundTrip(out)
		if err == nil {
			return resp, nil
		}
		if !dialFailed(err) {
			return nil, err
		}
		t.health.down(ep)
	}
	return nil, err
}

// dialFailed reports whether err is a failure to connect, before anything
// of the request was sent.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// health spreads requests over a backend's endpoints round-robin, leaving
// out for downFor the endpoints that refused a connection (unless all
// did).
type health struct {
	mu    sync.Mutex
	next  map[string]uint64    // service → round-robin counter
	until map[string]time.Time // endpoint → skipped until
}

func newHealth() *health {
	return &health{next: map[string]uint64{}, until: map[string]time.Time{}}
}

func (h *health) pick(b *Backend, tried map[string]bool) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	n := uint64(len(b.Endpoints))
	start := h.next[b.Service]
	h.next[b.Service]++
	fallback := ""
	for i := uint64(0); i < n; i++ {
		ep := b.Endpoints[(start+i)%n]
		if tried[ep] {
			continue
		}
		if until, ok := h.until[ep]; ok {
			if now.Before(until) {
				if fallback == "" {
					fallback = ep
				}
				continue
			}
			delete(h.until, ep) // up again: forget it
		}
		return ep
	}
	return fallback
}

func (h *health) down(ep string) {
	h.mu.Lock()
	h.until[ep] = time.Now().Add(downFor)
	h.mu.Unlock()
}

// statusWriter remembers the status code, and still lets the reverse
// proxy take the connection over for an upgrade and flush streams.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var _ io.Writer = (*statusWriter)(nil)

// cleanPath is the path requests are routed by: "//" and "/./" folded and
// "/x/.." resolved, as nginx normalises it, so "/public/../admin" is not
// routed by a /public rule; a trailing slash stays.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
