package ingress

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"orch/internal/routing"
)

// Proxy is the http.Handler of the front door's ports: it routes each
// request by the routing.Table of the port it came in on, applies the
// rule's filters and forwards it straight to an endpoint of one of the
// rule's Services (by weight), with net/http/httputil's reverse proxy
// (WebSocket upgrades included).
type Proxy struct {
	tables  atomic.Pointer[map[int]*routing.Table] // by listening port
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

// NewProxy makes a Proxy with no tables (every request 404s).
func NewProxy(m *Metrics, log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.Default()
	}
	p := &Proxy{health: newHealth(), metrics: m, log: log}
	p.tables.Store(&map[int]*routing.Table{})
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
			rl := r.In.Context().Value(forwardKey{}).(*forward).rule
			if rw := rl.Filters.Rewrite; rw != nil {
				if rw.Host != "" {
					r.Out.Host = rw.Host
				}
				if rw.Path != nil {
					r.Out.URL.Path = rw.Path.NewPath(routing.CleanPath(r.In.URL.Path), rl.Path)
					r.Out.URL.RawPath = ""
				}
			}
			rl.Filters.RequestHeaders.Apply(r.Out.Header)
		},
		ModifyResponse: func(resp *http.Response) error {
			fw := resp.Request.Context().Value(forwardKey{}).(*forward)
			fw.rule.Filters.ResponseHeaders.Apply(resp.Header)
			return nil
		},
		Transport:    &retrying{base: transport, health: p.health},
		ErrorHandler: p.failed,
	}
	return p
}

// SetTables makes tables (by listening port) those of the requests that
// come after.
func (p *Proxy) SetTables(tables map[int]*routing.Table) { p.tables.Store(&tables) }

// forward is what a request is forwarded with: its rule and the backend
// picked.
type forward struct {
	rule    *routing.Rule
	backend *routing.Backend
}

type forwardKey struct{}

// ServeHTTP routes and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	port := localPort(r)
	var rl *routing.Rule
	if tab := (*p.tables.Load())[port]; tab != nil {
		rl = tab.Match(r)
	}
	if rl == nil {
		p.metrics.observe(routing.Source{}, "", http.StatusNotFound, start)
		http.Error(w, "404 page not found (no Ingress or HTTPRoute routes this host and path)", http.StatusNotFound)
		return
	}
	if rd := rl.Filters.Redirect; rd != nil {
		code := redirect(w, r, rl, port)
		p.metrics.observe(rl.Source, "", code, start)
		return
	}
	b := pickBackend(rl.Backends)
	switch {
	case b == nil:
		p.metrics.observe(rl.Source, "", http.StatusInternalServerError, start)
		http.Error(w, "500 internal server error (the route has no backend with a weight)", http.StatusInternalServerError)
		return
	case b.Invalid != "":
		p.metrics.observe(rl.Source, b.Service, http.StatusInternalServerError, start)
		http.Error(w, "500 internal server error ("+b.Invalid+")", http.StatusInternalServerError)
		return
	case len(b.Endpoints) == 0:
		p.metrics.observe(rl.Source, b.Service, http.StatusServiceUnavailable, start)
		http.Error(w, "503 service unavailable (the Service "+b.Service+" has no ready endpoints)", http.StatusServiceUnavailable)
		return
	}
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	r = r.WithContext(context.WithValue(r.Context(), forwardKey{}, &forward{rule: rl, backend: b}))
	p.rp.ServeHTTP(sw, r)
	p.metrics.observe(rl.Source, b.Service, sw.code, start)
}

// localPort is the port the request came in on.
func localPort(r *http.Request) int {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// pickBackend picks one of bs in proportion to the weights; nil when no
// backend has a weight.
func pickBackend(bs []routing.Weighted) *routing.Backend {
	var total int64
	for _, b := range bs {
		total += int64(max(b.Weight, 0))
	}
	if total == 0 {
		return nil
	}
	n := rand.Int64N(total)
	for _, b := range bs {
		if n -= int64(max(b.Weight, 0)); n < 0 {
			return b.Backend
		}
	}
	return nil
}

// redirect answers with the rule's redirect (Gateway API's
// RequestRedirect) and returns the status code.
func redirect(w http.ResponseWriter, r *http.Request, rl *routing.Rule, port int) int {
	rd := rl.Filters.Redirect
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if rd.Scheme != "" {
		scheme = rd.Scheme
	}
	host := routing.HostOf(r)
	if rd.Host != "" {
		host = rd.Host
	}
	switch {
	case rd.Port != 0:
		port = int(rd.Port)
	case rd.Scheme == "https":
		port = 443
	case rd.Scheme != "":
		port = 80
	}
	// The path as it was sent, unless the redirect changes it.
	u := url.URL{Scheme: scheme, Host: host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	if rd.Path != nil {
		u.Path, u.RawPath = rd.Path.NewPath(routing.CleanPath(r.URL.Path), rl.Path), ""
	}
	if !(scheme == "http" && port == 80) && !(scheme == "https" && port == 443) {
		u.Host = net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
	} else if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		u.Host = "[" + host + "]" // an IPv6 address
	}
	code := rd.Code
	if code == 0 {
		code = http.StatusFound
	}
	w.Header().Set("Location", u.String())
	w.WriteHeader(code)
	return code
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
	fw, _ := r.Context().Value(forwardKey{}).(*forward)
	if fw == nil {
		return nil, errors.New("ingress: request without a backend")
	}
	b := fw.backend
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

func (h *health) pick(b *routing.Backend, tried map[string]bool) string {
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
