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
	kind, check, one := strings.Cut(strings.Trim(r.URL.Path, "/"), "/") // e.g. readyz, poststarthook/bootstrap-controller
	checks := s.healthChecks(kind == "readyz")
	if one {
		fn, ok := checks[check]
		if !ok {
			http.NotFound(w, r)
			return
		}
		checks = map[string]func(context.Context) error{check: fn}
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
			// As upstream: the cause goes to the log, not to callers,
			// who may be anonymous.
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", name)
			s.log.Warn("health check failed", "check", name, "endpoint", kind, "err", err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), kind)
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), kind)
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
		for name, fn := range s.cfg.ReadyChecks {
			checks[name] = fn
		}
		checks["informer-sync"] = func(context.Context) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.started {
				return fmt.Errorf("watch caches not started")
			}
			if !s.authorizersSynced() {
				return fmt.Errorf("the authorizers do not have the roles, bindings and pods yet")
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
