package localstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// FromStoreHeader is set on the answers the store gives instead of the
// server's.
const FromStoreHeader = "X-Orch-Local-Store"

// maxBody bounds the answers the store reads in full to record them.
const maxBody = 64 << 20

// offlineWindow is how long after a request found the server unreachable
// the store answers what it can without asking the server (a cut link
// costs every request a dial timeout; watches keep asking).
const offlineWindow = 10 * time.Second

// Config returns a copy of cfg whose requests go through the store: JSON
// only (what the store understands), and every answer it records kept,
// every read it can answer answered while the server is unreachable.
func (s *Store) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.Wrap(s.Transport)
	return c
}

// Transport wraps next: it records what the node needs, and answers from
// the store when next cannot reach the server.
func (s *Store) Transport(next http.RoundTripper) http.RoundTripper {
	return &transport{s: s, next: next}
}

type transport struct {
	s    *Store
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := classify(req)
	switch r.kind {
	case passThrough:
		resp, _, err := t.ask(req, func() (*http.Response, bool) { return nil, false })
		return resp, err
	case token:
		return t.token(req, r)
	case watch:
		resp, fromServer, err := t.ask(req, func() (*http.Response, bool) { return t.s.watchAnswer(req, r) })
		if fromServer && resp.StatusCode == http.StatusOK && isJSON(resp) {
			resp.Body = t.s.recordWatch(r, resp.Body)
		}
		return resp, err
	}
	resp, fromServer, err := t.ask(req, func() (*http.Response, bool) { return t.s.answer(req, r) })
	if !fromServer {
		return resp, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && r.kind == get:
		t.s.deleteObject(r.key)
	case resp.StatusCode == http.StatusOK && isJSON(resp):
		body, whole, err := readBody(resp)
		if err != nil || !whole {
			return resp, err
		}
		if r.kind == get {
			t.s.putObject(r.key, body, r.sealed)
		} else if err := t.s.recordList(r, body); err != nil {
			t.s.log.Warn("local store: cannot record a list", "collection", r.key, "err", err)
		}
	}
	return resp, nil
}

// WrappedRoundTripper lets client-go find the transport beneath to
// cancel a request through.
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

// ask sends req to the server, unless the store is offline and stored
// has an answer; when the server cannot be reached, stored's answer (if
// any) stands in for the failure. fromServer is true for the server's
// answer, which also ends the store's offline answers.
func (t *transport) ask(req *http.Request, stored func() (*http.Response, bool)) (resp *http.Response, fromServer bool, err error) {
	if t.s.offline() {
		if answer, ok := stored(); ok {
			return answer, false, nil
		}
	}
	resp, err = t.next.RoundTrip(req)
	if unreachable(req, resp, err) {
		t.s.wentOffline()
		if answer, ok := stored(); ok {
			if resp != nil {
				resp.Body.Close()
			}
			return answer, false, nil
		}
		return resp, false, err
	}
	if err != nil {
		return resp, false, err
	}
	t.s.reachable()
	return resp, true, nil
}

// token records TokenRequest answers and gives the stored one, while it
// is valid, when the server cannot be reached.
func (t *transport) token(req *http.Request, r request) (*http.Response, error) {
	if req.Body == nil {
		return t.next.RoundTrip(req)
	}
	spec, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	key, err := tokenKey(r.key, spec)
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(spec))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(spec)), nil }
	if err != nil { // not a TokenRequest the store understands: the server says why
		return t.next.RoundTrip(out)
	}
	resp, fromServer, err := t.ask(out, func() (*http.Response, bool) {
		body, ok, err := t.s.token(key)
		if err != nil {
			t.s.log.Warn("local store: cannot read a token", "key", r.key, "err", err)
		}
		return fromStore(req, http.StatusCreated, body), ok
	})
	if !fromServer || resp.StatusCode != http.StatusCreated || !isJSON(resp) {
		return resp, err
	}
	body, whole, err := readBody(resp)
	if err != nil || !whole {
		return resp, err
	}
	var tr struct {
		Status struct {
			ExpirationTimestamp time.Time `json:"expirationTimestamp"`
		} `json:"status"`
	}
	if json.Unmarshal(body, &tr) == nil && !tr.Status.ExpirationTimestamp.IsZero() {
		t.s.putToken(key, body, tr.Status.ExpirationTimestamp)
	}
	return resp, nil
}

// tokenKey names a TokenRequest by its service account and what its spec
// asks for (audiences, lifetime, the object it is bound to).
func tokenKey(path string, body []byte) (string, error) {
	var tr struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || len(tr.Spec) == 0 {
		return "", fmt.Errorf("not a TokenRequest: %v", err)
	}
	sum := sha256.Sum256(tr.Spec)
	return path + "#" + hex.EncodeToString(sum[:]), nil
}

// answer is the store's answer to a get or a list, if it has one.
func (s *Store) answer(req *http.Request, r request) (*http.Response, bool) {
	var body []byte
	var ok bool
	var err error
	if r.kind == get {
		body, ok, err = s.object(r.key)
	} else if !r.page {
		body, ok, err = s.listBody(r.key)
	}
	if err != nil {
		s.log.Warn("local store: cannot read", "key", r.key, "err", err)
	}
	if !ok {
		return nil, false
	}
	return fromStore(req, http.StatusOK, body), true
}

// fromStore is an HTTP answer with a body from the store.
func fromStore(req *http.Request, code int, body []byte) *http.Response {
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}, FromStoreHeader: {"true"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// unreachable is true when the server could not be asked: the request
// failed without the caller giving up, or a proxy or gateway in front of
// it, or the server itself, said it cannot serve now.
func unreachable(req *http.Request, resp *http.Response, err error) bool {
	if err != nil {
		return req.Context().Err() == nil
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func (s *Store) wentOffline() { s.offlineUntil.Store(s.now().Add(offlineWindow).UnixNano()) }

// reachable ends the offline window and the watches the store holds open:
// the server answered.
func (s *Store) reachable() {
	s.offlineUntil.Store(0)
	s.mu.Lock()
	if s.held != nil {
		close(s.held)
		s.held = nil
	}
	s.mu.Unlock()
}

// heldUntilReachable is closed when the server next answers.
func (s *Store) heldUntilReachable() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = make(chan struct{})
	}
	return s.held
}

func (s *Store) offline() bool { return s.now().UnixNano() < s.offlineUntil.Load() }

func isJSON(resp *http.Response) bool {
	t, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && t == "application/json"
}

// readBody reads up to maxBody bytes of an answer's body and puts them
// back in front of the rest for the caller; whole is false when there is
// more (then the store does not record it).
func readBody(resp *http.Response) (body []byte, whole bool, err error) {
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		resp.Body.Close()
		return nil, false, err
	}
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), rest), rest}
	return body, len(body) <= maxBody, nil
}

// heldWatch is how long the store's answer to a watch stays open after
// its events: then the informer watches again, through the server if it
// is back.
const heldWatch = 30 * time.Second

// watchAnswer answers a watch with initial events (how informers list)
// from the store: the collection as ADDED events, the bookmark that ends
// them, and then nothing until heldWatch passes, the server answers
// another request or the caller gives up.
// A watch that continues from a resource version is never answered: it
// waits for the server.
func (s *Store) watchAnswer(req *http.Request, r request) (*http.Response, bool) {
	if !r.initialEvents {
		return nil, false
	}
	m, items, ok, err := s.collection(r.key)
	if err != nil {
		s.log.Warn("local store: cannot read", "key", r.key, "err", err)
	}
	if !ok {
		return nil, false
	}
	kind := strings.TrimSuffix(m.Kind, "List")
	var b bytes.Buffer
	for _, item := range items {
		b.WriteString(`{"type":"ADDED","object":`)
		b.Write(withType(item, kind, m.APIVersion))
		b.WriteString("}\n")
	}
	end, _ := json.Marshal(map[string]any{"type": "BOOKMARK", "object": map[string]any{
		"kind": kind, "apiVersion": m.APIVersion,
		"metadata": map[string]any{"resourceVersion": m.ResourceVersion, "annotations": map[string]string{initialEventsEnd: "true"}},
	}})
	b.Write(end)
	b.WriteByte('\n')
	resp := fromStore(req, http.StatusOK, nil)
	resp.ContentLength = -1
	resp.Body = &heldBody{Reader: bytes.NewReader(b.Bytes()), ctx: req.Context(), timer: time.NewTimer(heldWatch),
		back: s.heldUntilReachable(), closed: make(chan struct{})}
	return resp, true
}

// withType is a list item with its kind and API version, which a watch
// event's object must have and a list's items may lack.
func withType(item []byte, kind, apiVersion string) []byte {
	var m objectMeta
	if json.Unmarshal(item, &m) != nil || m.Kind != "" || len(item) < 2 || item[0] != '{' {
		return item
	}
	head, _ := json.Marshal(map[string]string{"kind": kind, "apiVersion": apiVersion})
	out := append(head[:len(head)-1:len(head)-1], ',')
	if string(item) == "{}" {
		return head
	}
	return append(out, item[1:]...)
}

// heldBody gives its events and then holds the stream open until the
// timer fires, the server answers again, the request's context ends or
// it is closed.
type heldBody struct {
	*bytes.Reader
	ctx       context.Context
	timer     *time.Timer
	back      <-chan struct{} // the server answered again
	closed    chan struct{}
	closeOnce sync.Once
}

func (h *heldBody) Read(p []byte) (int, error) {
	if h.Len() > 0 {
		return h.Reader.Read(p)
	}
	select {
	case <-h.timer.C:
	case <-h.ctx.Done():
	case <-h.back:
	case <-h.closed:
	}
	return 0, io.EOF
}

func (h *heldBody) Close() error {
	h.closeOnce.Do(func() { close(h.closed); h.timer.Stop() })
	return nil
}
