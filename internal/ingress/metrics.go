package ingress

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"orch/internal/routing"
)

// Metrics are the front door's Prometheus metrics, by Ingress or
// HTTPRoute (namespace/name; the other label is empty) and Service port
// (namespace/name:port); a request that nothing routes has all three
// empty.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics makes the metrics; register Collectors() where they are served.
func NewMetrics() *Metrics {
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_ingress_requests_total",
			Help: "Requests through the built-in Ingress and Gateway controller, by Ingress or HTTPRoute, Service port and status code (5xx are errors: 500 no valid backend, 502 no endpoint answered, 503 no ready endpoint).",
		}, []string{"ingress", "httproute", "service", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orch_ingress_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer, by Ingress or HTTPRoute and Service port.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms … 16 s
		}, []string{"ingress", "httproute", "service"}),
	}
}

// Collectors are what to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.duration}
}

func (m *Metrics) observe(src routing.Source, service string, code int, start time.Time) {
	if m == nil {
		return
	}
	var ingress, route string
	switch src.Kind {
	case "Ingress":
		ingress = src.Name
	case "HTTPRoute":
		route = src.Name
	}
	m.requests.WithLabelValues(ingress, route, service, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(ingress, route, service).Observe(time.Since(start).Seconds())
}
