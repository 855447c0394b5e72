package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// healthServer answers the healthCheckNodePort of every LoadBalancer
// Service with externalTrafficPolicy Local, as kube-proxy does: 200 while
// this node has a ready endpoint of the Service, 503 otherwise, with a JSON
// body naming the Service and counting its local endpoints. A load
// balancer uses it to send traffic only to nodes that can keep the
// client's address.
//
// As upstream's, the answer is also 503 while the proxy is unhealthy: a
// change has waited longer than timeout for a successful sync.
type healthServer struct {
	log     *slog.Logger
	timeout time.Duration
	now     func() time.Time
	// pendingSince is when the oldest change not yet synced came (Unix
	// nanoseconds; 0 when every change is in the rules).
	pendingSince atomic.Int64
	mu           sync.Mutex
	ports        map[int32]*healthPort
}

// healthPort is one Service's health check listener.
type healthPort struct {
	namespace, name string
	local           atomic.Int64
	proxyHealthy    func() bool
	srv             *http.Server
}

func newHealthServer(log *slog.Logger, timeout time.Duration) *healthServer {
	return &healthServer{log: log, timeout: timeout, now: time.Now, ports: map[int32]*healthPort{}}
}

// queued records that a change waits for a sync.
func (h *healthServer) queued() {
	h.pendingSince.CompareAndSwap(0, h.now().UnixNano())
}

// healthy: no change has waited longer than the timeout.
func (h *healthServer) healthy() bool {
	since := h.pendingSince.Load()
	return since == 0 || h.now().Sub(time.Unix(0, since)) <= h.timeout
}

// healthCheck is what one port should answer.
type healthCheck struct {
	namespace, name string
	local           int
}

// healthChecks are the health check ports in, with their local counts.
func healthChecks(in Input) map[int32]healthCheck {
	out := map[int32]healthCheck{}
	for _, s := range in.Services {
		if s.Spec.HealthCheckNodePort == 0 || s.Spec.Type != v1.ServiceTypeLoadBalancer ||
			s.Spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyLocal {
			continue
		}
		out[s.Spec.HealthCheckNodePort] = healthCheck{namespace: s.Namespace, name: s.Name, local: localReady(in, s)}
	}
	return out
}

// localReady counts the distinct ready addresses of s's endpoints on this
// node, in the address family that has most: a dual-stack Service has a
// slice set per family, which name the same pods, so the count is of pods
// and not twice that.
func localReady(in Input, s *v1.Service) int {
	seen := map[discovery.AddressType]map[string]bool{}
	most := 0
	for _, sl := range in.Slices {
		if sl.Namespace != s.Namespace || sl.Labels[discovery.LabelServiceName] != s.Name {
			continue
		}
		if seen[sl.AddressType] == nil {
			seen[sl.AddressType] = map[string]bool{}
		}
		for _, e := range sl.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			if ready && e.NodeName != nil && *e.NodeName == in.NodeName && len(e.Addresses) > 0 {
				seen[sl.AddressType][e.Addresses[0]] = true
			}
		}
		most = max(most, len(seen[sl.AddressType]))
	}
	return most
}

// sync records a successful sync of in: it opens the ports in needs,
// closes the others and updates the counts. A port that cannot be opened
// is logged and tried again at the next sync.
func (h *healthServer) sync(in Input) {
	h.pendingSince.Store(0)
	want := healthChecks(in)
	h.mu.Lock()
	defer h.mu.Unlock()
	for port, p := range h.ports {
		if w, ok := want[port]; !ok || w.namespace != p.namespace || w.name != p.name {
			p.srv.Close()
			delete(h.ports, port)
		}
	}
	for port, w := range want {
		p := h.ports[port]
		if p == nil {
			var err error
			if p, err = h.open(port, w); err != nil {
				h.log.Warn("cannot serve a Service's health check node port; retrying at the next sync",
					"service", w.namespace+"/"+w.name, "port", port, "err", err)
				continue
			}
			h.ports[port] = p
		}
		p.local.Store(int64(w.local))
	}
}

func (h *healthServer) open(port int32, w healthCheck) (*healthPort, error) {
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return nil, err
	}
	p := &healthPort{namespace: w.namespace, name: w.name, proxyHealthy: h.healthy}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := p.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Warn("health check node port stopped", "port", port, "err", err)
		}
	}()
	return p, nil
}

// ServeHTTP answers as upstream's service health server.
func (p *healthPort) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	local, healthy := p.local.Load(), p.proxyHealthy()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.FormatInt(local, 10))
	if local == 0 || !healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(map[string]any{
		"service":             map[string]string{"namespace": p.namespace, "name": p.name},
		"localEndpoints":      local,
		"serviceProxyHealthy": healthy,
	})
}

// close stops every listener.
func (h *healthServer) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for port, p := range h.ports {
		p.srv.Shutdown(ctx)
		delete(h.ports, port)
	}
}
