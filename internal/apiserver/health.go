package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// serveHealth answers /healthz, /livez and /readyz (and /readyz/CHECK) like
// upstream: "ok", or per-check lines with ?verbose, and 500 when a check fails.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	parts := splitPath(r.URL.Path)
	checks := s.healthChecks(parts[0] == "readyz")
	if len(parts) == 2 {
		fn, ok := checks[parts[1]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		checks = map[string]func(context.Context) error{parts[1]: fn}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	failed := false
	for _, name := range names {
		if err := checks[name](ctx); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", name, err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), parts[0])
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), parts[0])
		return
	}
	fmt.Fprint(w, "ok")
}

func (s *Server) healthChecks(ready bool) map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{"ping": func(context.Context) error { return nil }}
	for name, fn := range s.cfg.Checks {
		checks[name] = fn
	}
	if ready {
		checks["informer-sync"] = func(context.Context) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.started {
				return fmt.Errorf("watch caches not started")
			}
			return nil
		}
	}
	return checks
}

func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	data, _ := json.MarshalIndent(s.cfg.Version, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}
