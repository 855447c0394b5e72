package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A failing health check says which check failed and nothing of why: the
// callers may be anonymous, and the cause is in the log (as upstream).
func TestHealthWithholdsReasons(t *testing.T) {
	_, cidr, _ := net.ParseCIDR("10.43.0.0/16")
	var logged strings.Builder
	s, err := New(Config{ServiceCIDRs: []*net.IPNet{cidr}, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		Checks: map[string]func(context.Context) error{"etcd": func(context.Context) error {
			return errors.New("dial tcp 127.0.0.1:2379: secret detail")
		}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/readyz", "/livez?verbose", "/healthz"} {
		rec := httptest.NewRecorder()
		s.serveHealth(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusInternalServerError || !strings.Contains(body, "[-]etcd failed: reason withheld\n") || strings.Contains(body, "secret detail") {
			t.Errorf("%s: %d\n%s", path, rec.Code, body)
		}
	}
	if !strings.Contains(logged.String(), "secret detail") {
		t.Errorf("the cause is not in the log:\n%s", logged.String())
	}
}
