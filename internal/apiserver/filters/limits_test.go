package filters

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// blocking is a handler that holds every request until release is closed,
// telling entered when one arrives.
type blocking struct {
	entered chan string
	release chan struct{}
}

func (b *blocking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.entered <- r.Method + " " + r.URL.String()
	<-b.release
	w.WriteHeader(http.StatusOK)
}

func asUser(h http.Handler, groups ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(WithUser(r.Context(), User{Name: "u", Groups: groups})))
	})
}

func TestMaxInFlight(t *testing.T) {
	b := &blocking{entered: make(chan string, 10), release: make(chan struct{})}
	srv := httptest.NewServer(asUser(MaxInFlight(Limits{ReadOnly: 1, Mutating: 1}, b), "system:authenticated"))
	defer srv.Close()
	admin := httptest.NewServer(asUser(MaxInFlight(Limits{ReadOnly: 1, Mutating: 1}, b), "system:masters"))
	defer admin.Close()

	results := make(chan int, 10)
	send := func(base, method, path string) {
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			results <- 0
			return
		}
		resp.Body.Close()
		results <- resp.StatusCode
	}
	// One read and one write fill the limits.
	go send(srv.URL, http.MethodGet, "/api/v1/namespaces/a/pods")
	<-b.entered
	go send(srv.URL, http.MethodPost, "/api/v1/namespaces/a/pods")
	<-b.entered

	// The next read is refused at once, with upstream's Status.
	resp, err := http.Get(srv.URL + "/api/v1/namespaces/b/configmaps/x")
	if err != nil {
		t.Fatal(err)
	}
	var status metav1.Status
	json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		status.Reason != metav1.StatusReasonTooManyRequests || status.Details == nil || status.Details.RetryAfterSeconds != 1 {
		t.Errorf("over the limit: %d, Retry-After %q, %+v", resp.StatusCode, resp.Header.Get("Retry-After"), status)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/namespaces/b/configmaps/x", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a write over the limit: %v %v", resp, err)
	}

	// Watches, exec and logs are not counted, nor is system:masters.
	for _, path := range []string{"/api/v1/namespaces/a/pods?watch=true", "/api/v1/namespaces/a/pods/p/log", "/api/v1/namespaces/a/pods/p/exec"} {
		go send(srv.URL, http.MethodGet, path)
		<-b.entered
	}
	go send(admin.URL, http.MethodGet, "/api/v1/secrets")
	<-b.entered

	close(b.release)
	for i := 0; i < 6; i++ {
		if code := <-results; code != http.StatusOK {
			t.Errorf("a request let through got %d", code)
		}
	}
}
