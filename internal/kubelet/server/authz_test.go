package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/stats/", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/logs/", "get", []string{"log"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"POST", "/checkpoint/default/web/app", "create", []string{"checkpoint"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/statusz", "get", []string{"statusz", "proxy"}},
		// Upstream's kubelet has no /spec any more: it is nodes/proxy.
		{"GET", "/spec/", "get", []string{"proxy"}},
		// containerLogs is nodes/proxy upstream, not nodes/log.
		{"GET", "/containerLogs/default/web/app", "get", []string{"proxy"}},
		{"POST", "/exec/default/web/app", "create", []string{"proxy"}},
		{"GET", "/exec/default/web/app", "get", []string{"proxy"}},
		{"POST", "/attach/default/web/uid/app", "create", []string{"proxy"}},
		{"POST", "/portForward/default/web", "create", []string{"proxy"}},
		{"POST", "/run/default/web/app", "create", []string{"proxy"}},
		{"PUT", "/debug/flags/v", "update", []string{"proxy"}},
		{"PATCH", "/", "patch", []string{"proxy"}},
		{"DELETE", "/pods", "delete", []string{"pods", "proxy"}},
		// Prefixes match whole segments.
		{"GET", "/podsx", "get", []string{"proxy"}},
		{"GET", "/statsx/summary", "get", []string{"proxy"}},
		{"GET", "/healthzz", "get", []string{"proxy"}},
		// Methods upstream does not name get an empty verb.
		{"HEAD", "/healthz", "", []string{"healthz", "proxy"}},
		{"OPTIONS", "/stats/summary", "", []string{"stats"}},
	}
	for _, tt := range tests {
		verb, subs := requestVerb(tt.method), requestSubresources(tt.path)
		if verb != tt.verb || !reflect.DeepEqual(subs, tt.subresources) {
			t.Errorf("%s %s: verb %q subresources %v, want %q %v", tt.method, tt.path, verb, subs, tt.verb, tt.subresources)
		}
	}
}

// tokens accepts every token "user:NAME" as NAME, with a uid, a group and an extra.
type tokens struct{}

func (tokens) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	out := tr.DeepCopy()
	if name, ok := strings.CutPrefix(tr.Spec.Token, "user:"); ok && name != "" {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: name, UID: name + "-uid", Groups: []string{"devs", "system:authenticated"},
			Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}}}}
	}
	return out, nil
}

// sars allows what allow lists ("user verb subresource"), fails while err
// is set, and keeps the reviews it answered.
type sars struct {
	mu    sync.Mutex
	allow map[string]bool
	err   error
	asked []authorizationv1.SubjectAccessReviewSpec
}

func (s *sars) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, r.Spec)
	if s.err != nil {
		return nil, s.err
	}
	a := r.Spec.ResourceAttributes
	out := r.DeepCopy()
	out.Status.Allowed = s.allow[r.Spec.User+" "+a.Verb+" "+a.Subresource]
	return out, nil
}

func (s *sars) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asked)
}

func (s *sars) set(allow map[string]bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allow, s.err = allow, err
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// guarded is the authenticated and authorized handler over a handler that
// answers "served".
func guarded(reviews SubjectAccessReviewer, clock *fakeClock) http.Handler {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
	a := newAuthenticator(tokens{}, clock.now)
	z := newAuthorizer(reviews, "node-1", clock.now, slog.New(slog.DiscardHandler))
	return a.wrap(z.wrap(next))
}

func call(h http.Handler, method, path, token string) (int, string) {
	r := httptest.NewRequest(method, "https://kubelet"+path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func TestAuthorization(t *testing.T) {
	reviews := &sars{allow: map[string]bool{"alice get stats": true, "alice create proxy": true, "bob get proxy": true}}
	h := guarded(reviews, &fakeClock{t: time.Unix(1000, 0)})
	tests := []struct {
		name, method, path, token string
		code                      int
		body                      string
		reviews                   int // SubjectAccessReviews asked
	}{
		{"no credentials", "GET", "/stats/summary", "", 401, "Unauthorized\n", 0},
		{"refused", "GET", "/stats/summary", "user:mallory", 403, "Forbidden (user=mallory, verb=get, resource=nodes, subresource(s)=[stats])\n", 1},
		{"allowed", "GET", "/stats/summary", "user:alice", 200, "served", 1},
		{"verb matters", "GET", "/exec/default/web/app", "user:alice", 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])\n", 1},
		{"exec", "POST", "/exec/default/web/app", "user:alice", 200, "served", 1},
		{"fine-grained falls back to proxy", "GET", "/pods", "user:bob", 200, "served", 2},
		{"both refused", "GET", "/healthz", "user:carol", 403, "Forbidden (user=carol, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n", 2},
		{"only the new question is asked", "GET", "/healthz", "user:alice", 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n", 1},
	}
	for _, tt := range tests {
		before := reviews.calls()
		code, body := call(h, tt.method, tt.path, tt.token)
		if code != tt.code || body != tt.body {
			t.Errorf("%s: %s %s answered %d %q, want %d %q", tt.name, tt.method, tt.path, code, body, tt.code, tt.body)
		}
		if n := reviews.calls() - before; n != tt.reviews {
			t.Errorf("%s: %d SubjectAccessReviews, want %d", tt.name, n, tt.reviews)
		}
	}

	// The review carries the caller as the TokenReview named it.
	want := authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "stats", Name: "node-1"},
		User:               "alice", UID: "alice-uid", Groups: []string{"devs", "system:authenticated"},
		Extra: map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}},
	}
	if got := reviews.asked[1]; !reflect.DeepEqual(got, want) {
		t.Errorf("SubjectAccessReview spec:\n%+v\nwant\n%+v", got, want)
	}
}

func TestAuthorizationCache(t *testing.T) {
	reviews := &sars{allow: map[string]bool{"alice get stats": true}}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := guarded(reviews, clock)
	expect := func(step, token, path string, code, calls int) {
		t.Helper()
		if got, body := call(h, "GET", path, token); got != code {
			t.Errorf("%s: GET %s answered %d %q, want %d", step, path, got, body, code)
		}
		if n := reviews.calls(); n != calls {
			t.Errorf("%s: %d SubjectAccessReviews in all, want %d", step, n, calls)
		}
	}
	expect("first allowed", "user:alice", "/stats/summary", 200, 1)
	expect("allowed again", "user:alice", "/stats/summary", 200, 1)
	expect("first refused", "user:bob", "/stats/summary", 403, 2)
	expect("refused again", "user:bob", "/stats/summary", 403, 2)
	expect("another subresource", "user:alice", "/metrics", 403, 3)

	// bob is now allowed; his refusal is kept for 30 s, alice's answer for 5 min.
	reviews.set(map[string]bool{"alice get stats": true, "bob get stats": true}, nil)
	clock.step(29 * time.Second)
	expect("refusal within 30 s", "user:bob", "/stats/summary", 403, 3)
	clock.step(time.Second)
	expect("refusal after 30 s", "user:bob", "/stats/summary", 200, 4)
	expect("allowed within 5 min", "user:alice", "/stats/summary", 200, 4)

	// A failing apiserver is 500 and is not kept.
	reviews.set(nil, errors.New("connection refused"))
	clock.step(5 * time.Minute)
	code, body := call(h, "GET", "/stats/summary", "user:alice")
	if want := "Authorization error (user=alice, verb=get, resource=nodes, subresource=stats)\n"; code != 500 || body != want {
		t.Errorf("apiserver down: %d %q, want 500 %q", code, body, want)
	}
	expect("still down", "user:alice", "/stats/summary", 500, 6)
	reviews.set(map[string]bool{"alice get stats": true}, nil)
	expect("back", "user:alice", "/stats/summary", 200, 7)
}

func TestNoSubjectAccessReviewClient(t *testing.T) {
	h := guarded(nil, &fakeClock{t: time.Unix(1000, 0)})
	code, body := call(h, "GET", "/healthz", "user:alice")
	want := "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[healthz proxy]): this kubelet was started without a SubjectAccessReview client, so it cannot ask the apiserver and refuses every request\n"
	if code != 403 || body != want {
		t.Errorf("without a reviewer: %d %q, want 403 %q", code, body, want)
	}
	if code, _ := call(h, "GET", "/healthz", ""); code != 401 {
		t.Errorf("without a reviewer or credentials: %d, want 401", code)
	}
}

func TestReviewCacheBound(t *testing.T) {
	c := newReviewCache[bool](3)
	now := time.Unix(1000, 0)
	key := func(i byte) [32]byte { return [32]byte{i} }
	c.put(key(1), true, now, time.Second)
	c.put(key(2), true, now, time.Minute)
	c.put(key(3), true, now, time.Minute)
	later := now.Add(2 * time.Second)
	c.put(key(4), true, later, time.Minute) // full: the expired key 1 goes
	if c.len() != 3 {
		t.Fatalf("%d entries, want 3", c.len())
	}
	for _, i := range []byte{2, 3, 4} {
		if _, ok := c.get(key(i), later); !ok {
			t.Errorf("key %d was evicted while an expired one was there", i)
		}
	}
	c.put(key(5), false, later, time.Minute) // full, nothing expired: one goes
	if c.len() != 3 {
		t.Fatalf("%d entries, want 3", c.len())
	}
	if v, ok := c.get(key(5), later); !ok || v {
		t.Errorf("the newest entry: %v %v", v, ok)
	}
	if _, ok := c.get(key(5), later.Add(time.Minute)); ok {
		t.Errorf("an entry outlived its ttl")
	}
}
