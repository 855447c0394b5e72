// Package apiserver serves the Kubernetes API over HTTP: discovery, OpenAPI,
// and generic REST handlers (get, list, watch, create, update, patch, delete,
// deletecollection and the status, scale and binding subresources) for every
// resource in the registry, stored through internal/storage.
package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"orch/internal/apiserver/registry"
	"orch/internal/storage"
)

// Config is what the apiserver needs from the composition root.
type Config struct {
	Storage     storage.Interface
	Resources   []registry.Resource
	ServiceCIDR *net.IPNet
	Version     version.Info
	Log         *slog.Logger
	// Checks are extra readiness checks (e.g. "etcd") shown on /readyz.
	Checks map[string]func(ctx context.Context) error
}

// Server is the API handler. Start runs its watch caches; ServeHTTP serves.
type Server struct {
	cfg       Config
	log       *slog.Logger
	codecs    *codecs
	resources map[schema.GroupVersionResource]*resourceStore
	groups    []apiGroup // discovery order
	metrics   *metrics
	alloc     *allocator
	fields    *fieldManagers
	openapi   openAPIDocs

	mu      sync.Mutex
	started bool
}

// apiGroup is one group version and its resources, in discovery order.
type apiGroup struct {
	gv        schema.GroupVersion
	resources []*resourceStore
}

// New builds the server over cfg.Storage.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, log: cfg.Log, codecs: newCodecs(newScheme()),
		resources: map[schema.GroupVersionResource]*resourceStore{}, metrics: newMetrics()}
	if cfg.ServiceCIDR == nil {
		return nil, fmt.Errorf("apiserver: a service CIDR is required")
	}
	s.alloc = &allocator{store: cfg.Storage, cidr: cfg.ServiceCIDR}
	defaults := defaulter{byKind: map[schema.GroupVersionKind]func(runtime.Object){}}
	for _, res := range cfg.Resources {
		if err := s.addResource(res); err != nil {
			return nil, err
		}
		if res.Default != nil {
			defaults.byKind[res.GroupVersion.WithKind(res.Kind)] = res.Default
		}
	}
	s.fields = newFieldManagers(s.codecs.scheme, defaults)
	return s, nil
}

func (s *Server) addResource(res registry.Resource) error {
	gvr := res.GroupVersion.WithResource(res.Resource)
	if _, dup := s.resources[gvr]; dup {
		return fmt.Errorf("resource %s registered twice", gvr)
	}
	prefix := "/registry/" + res.Resource + "/"
	if res.GroupVersion.Group != "" && storedApart(res) {
		prefix = "/registry/" + res.GroupVersion.Group + "/" + res.Resource + "/"
	}
	rs := &resourceStore{
		res: res, gvk: res.GroupVersion.WithKind(res.Kind), gr: gvr.GroupResource(),
		prefix: prefix, store: s.cfg.Storage, codecs: s.codecs,
	}
	rs.cache = storage.NewCache(s.cfg.Storage, prefix, rs.decodeAny, 1000, s.log.With("cache", gvr.GroupResource().String()))
	s.resources[gvr] = rs
	for i := range s.groups {
		if s.groups[i].gv == res.GroupVersion {
			s.groups[i].resources = append(s.groups[i].resources, rs)
			return nil
		}
	}
	s.groups = append(s.groups, apiGroup{gv: res.GroupVersion, resources: []*resourceStore{rs}})
	return nil
}

// storedApart is true for resources whose plural name is used by two groups
// (events in core and events.k8s.io): the non-core one gets its own prefix.
func storedApart(res registry.Resource) bool { return res.Resource == "events" }

// Start runs the watch caches until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, rs := range s.resources {
		wg.Add(1)
		go func() { defer wg.Done(); rs.cache.Start(ctx) }()
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	wg.Wait()
	return nil
}

// ServeHTTP routes a request that has passed authentication.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/healthz" || path == "/livez" || path == "/readyz" ||
		strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/livez/") || strings.HasPrefix(path, "/readyz/"):
		s.serveHealth(w, r)
	case path == "/version" || path == "/version/":
		s.serveVersion(w, r)
	case path == "/metrics":
		s.metrics.serve(w, r)
	case strings.HasPrefix(path, "/openapi/"):
		s.serveOpenAPI(w, r)
	default:
		s.serveAPI(w, r)
	}
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	info, isResource, err := parseResourcePath(r)
	if err != nil {
		s.respondError(w, r, badRequest("%v", err), schema.GroupResource{}, "")
		return
	}
	if !isResource {
		s.serveDiscovery(w, r)
		return
	}
	rs, ok := s.resources[info.GroupVersion.WithResource(info.Resource)]
	if !ok {
		if s.serveDiscovery(w, r) {
			return
		}
		s.respondError(w, r, notFoundPath(), schema.GroupResource{}, "")
		return
	}
	s.metrics.observe(info, rs, w, r, func(w http.ResponseWriter) { s.serveResource(w, r, info, rs) })
}
