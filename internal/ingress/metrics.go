package ingress

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Ingress proxy's Prometheus metrics, by Ingress
// (namespace/name) and Service port (namespace/name:port); a request that
// no Ingress routes has both labels empty.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics makes the metrics; register Collectors() where they are served.
func NewMetrics() *Metrics {
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_ingress_requests_total",
			Help: "Requests through the built-in Ingress controller, by Ingress, Service port and status code (5xx are errors: 502 no endpoint answered, 503 no ready endpoint).",
		}, []string{"ingress", "service", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orch_ingress_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its answer, by Ingress and Service port.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms … 16 s
		}, []string{"ingress", "service"}),
	}
}

// Collectors are what to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.duration}
}

func (m *Metrics) observe(ingress, service string, code int, start time.Time) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(ingress, service, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(ingress, service).Observe(time.Since(start).Seconds())
}
