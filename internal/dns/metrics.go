package dns

import (
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Where an answer came from: the label "source" of the latency histogram.
const (
	sourceCluster = "cluster" // the cluster zone, from the informer caches
	sourceCache   = "cache"   // a cached upstream answer
	sourceForward = "forward" // an upstream, just now
	sourceError   = "error"   // a malformed or refused query
)

// metrics are the server's Prometheus metrics, in their own registry.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec // type, rcode
	cacheHits     prometheus.Counter
	cacheMisses   prometheus.Counter
	forwardErrors *prometheus.CounterVec // upstream
	duration      *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_dns_requests_total",
			Help: "DNS requests answered, by query type and response code.",
		}, []string{"type", "rcode"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orch_dns_cache_hits_total",
			Help: "Forwarded names answered from the cache.",
		}),
		cacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orch_dns_cache_misses_total",
			Help: "Forwarded names not in the cache, asked upstream.",
		}),
		forwardErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_dns_forward_errors_total",
			Help: "Failed exchanges with an upstream resolver (timeouts, SERVFAIL, REFUSED, bad answers).",
		}, []string{"upstream"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orch_dns_request_duration_seconds",
			Help:    "Time to answer a DNS request, by where the answer came from (cluster, cache, forward, error).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 17), // 50µs … 3.3s
		}, []string{"source"}),
	}
	m.reg.MustRegister(m.requests, m.cacheHits, m.cacheMisses, m.forwardErrors, m.duration)
	return m
}

// cacheEntries exports the cache's size.
func (m *metrics) cacheEntries(size func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "orch_dns_cache_entries",
		Help: "Forwarded answers in the cache.",
	}, func() float64 { return float64(size()) }))
}

// knownTypes bound the "type" label; others count as "other".
var knownTypes = map[uint16]bool{
	dns.TypeA: true, dns.TypeAAAA: true, dns.TypeSRV: true, dns.TypePTR: true,
	dns.TypeCNAME: true, dns.TypeTXT: true, dns.TypeSOA: true, dns.TypeNS: true,
	dns.TypeMX: true, dns.TypeANY: true, dns.TypeHTTPS: true, dns.TypeSVCB: true,
}

func (m *metrics) observe(qtype uint16, rcode int, source string, d time.Duration) {
	t := "other"
	if knownTypes[qtype] {
		t = dns.TypeToString[qtype]
	}
	rc, ok := dns.RcodeToString[rcode]
	if !ok {
		rc = "other"
	}
	m.requests.WithLabelValues(t, rc).Inc()
	m.duration.WithLabelValues(source).Observe(d.Seconds())
}
