package filters

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTimeout(t *testing.T) {
	deadlines := make(chan time.Duration, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := r.Context().Deadline()
		if !ok {
			deadlines <- 0
		} else {
			deadlines <- time.Until(d)
		}
		switch r.URL.Query().Get("do") {
		case "hang":
			<-r.Context().Done()
			w.Write([]byte("too late"))
		case "begin":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			w.Write([]byte("ok"))
		}
	})
	srv := httptest.NewServer(Recover(slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout(time.Hour, handler)))
	defer srv.Close()
	get := func(path string) (*http.Response, error) { return http.Get(srv.URL + path) }

	// A quick request gets its answer, with the limit as its deadline.
	resp, err := get("/api/v1/pods")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("quick request: %v %v", resp, err)
	}
	resp.Body.Close()
	if d := <-deadlines; d < 59*time.Minute {
		t.Errorf("deadline in %v, want about an hour", d)
	}

	// A shorter ?timeout= wins; a request past it gets 504.
	resp, err = get("/api/v1/pods?do=hang&timeout=50ms")
	if err != nil {
		t.Fatal(err)
	}
	var status metav1.Status
	json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	<-deadlines
	if resp.StatusCode != http.StatusGatewayTimeout || status.Reason != metav1.StatusReasonTimeout ||
		status.Message != "Timeout: request did not complete within requested timeout - context deadline exceeded" {
		t.Errorf("hung request: %d %+v", resp.StatusCode, status)
	}

	// One that had begun to answer is cut off.
	resp, err = get("/api/v1/pods?do=begin&timeout=50ms")
	<-deadlines
	if err == nil {
		err = json.NewDecoder(resp.Body).Decode(&status)
		resp.Body.Close()
		if err == nil {
			t.Error("a request that timed out mid-answer ended cleanly")
		}
	}

	// Watches and exec have no deadline.
	for _, path := range []string{"/api/v1/pods?watch=1", "/api/v1/namespaces/a/pods/p/exec"} {
		resp, err := get(path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if d := <-deadlines; d != 0 {
			t.Errorf("%s has a deadline", path)
		}
	}

	// A timeout that does not parse is a bad request.
	resp, err = get("/api/v1/pods?timeout=soon")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("?timeout=soon: %d", resp.StatusCode)
	}
}
