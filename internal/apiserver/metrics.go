package apiserver

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	compmetrics "k8s.io/component-base/metrics"
)

// metrics are the Prometheus series /metrics serves, named as upstream's.
type metrics struct {
	registry *prometheus.Registry
	// kube holds the series of upstream libraries that register through
	// k8s.io/component-base/metrics (PodSecurity's).
	kube     compmetrics.KubeRegistry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total", Help: "Counter of apiserver requests broken out by verb, group, version, resource, subresource and HTTP response code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_request_duration_seconds", Help: "Response latency distribution in seconds for each verb, group, version, resource and subresource.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource", "subresource"}),
	}
	m.registry.MustRegister(m.requests, m.latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.kube = compmetrics.NewKubeRegistry()
	m.handler = promhttp.HandlerFor(prometheus.Gatherers{m.registry, m.kube}, promhttp.HandlerOpts{})
	return m
}

func (m *metrics) serve(w http.ResponseWriter, r *http.Request) { m.handler.ServeHTTP(w, r) }

// observe runs serve and records its verb, resource, code and latency. Watch
// latency is not recorded (a watch lasts as long as the client wants).
func (m *metrics) observe(info requestInfo, rs *resourceStore, w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter)) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	serve(rec)
	gv := info.GroupVersion
	m.requests.WithLabelValues(info.Verb, gv.Group, gv.Version, info.Resource, info.Subresource, strconv.Itoa(rec.code)).Inc()
	if info.Verb != "watch" {
		m.latency.WithLabelValues(info.Verb, gv.Group, gv.Version, info.Resource, info.Subresource).Observe(time.Since(start).Seconds())
	}
}

// statusRecorder remembers the status code written through it.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets streaming subresources (exec, attach, portforward, proxy)
// take over the connection; it records 101 Switching Protocols.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.code = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// Unwrap is for http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
