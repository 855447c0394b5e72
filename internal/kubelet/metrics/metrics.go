// Package metrics keeps the kubelet's Prometheus metrics under upstream's
// names, for what orch's kubelet measures: the container runtime's
// operations (kubelet_runtime_operations_*), the probes (prober_probe_*)
// and the node's name. The kubelet API serves them at /metrics and
// /metrics/probes; /metrics/resource and /metrics/cadvisor are built from
// the stats summary by the server itself.
package metrics

import (
	"context"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
)

// Kubelet is one kubelet's metrics. Its methods are safe to call
// concurrently; a nil *Kubelet records nothing.
type Kubelet struct {
	main, probes *prometheus.Registry

	runtimeOps      *prometheus.CounterVec   // operation_type
	runtimeErrors   *prometheus.CounterVec   // operation_type
	runtimeDuration *prometheus.HistogramVec // operation_type
	probeTotal      *prometheus.CounterVec   // probe_type, result, container, pod, namespace, pod_uid
	probeDuration   *prometheus.HistogramVec // probe_type, container, pod, namespace
}

// New returns the metrics of the kubelet of node, with the Go runtime's
// and the process's metrics in /metrics as upstream's.
func New(node string) *Kubelet {
	k := &Kubelet{
		main:   prometheus.NewRegistry(),
		probes: prometheus.NewRegistry(),
		runtimeOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_total",
			Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		runtimeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_errors_total",
			Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		runtimeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		probeTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober", Name: "probe_total",
			Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		probeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober", Name: "probe_duration_seconds",
			Help:    "Duration in seconds for a probe response.",
			Buckets: prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
	nodeName := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "kubelet", Name: "node_name",
		Help: "The node's name. The count is always 1.",
	}, []string{"node"})
	nodeName.WithLabelValues(node).Set(1)
	k.main.MustRegister(k.runtimeOps, k.runtimeErrors, k.runtimeDuration, nodeName,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	k.probes.MustRegister(k.probeTotal, k.probeDuration)
	return k
}

// Handler serves /metrics.
func (k *Kubelet) Handler() http.Handler { return handler(k.main) }

// Register adds the collectors of another of the agent's components (the
// Ingress controller's) to /metrics.
func (k *Kubelet) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := k.main.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ProbesHandler serves /metrics/probes.
func (k *Kubelet) ProbesHandler() http.Handler { return handler(k.probes) }

// Handler serves the metrics of the collectors (in a registry of their
// own) in Prometheus's text format, or the one the scraper negotiates.
func Handler(cs ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	return handler(reg)
}

func handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// RuntimeInterceptor counts and times the calls of a CRI client as
// upstream's instrumented runtime service does.
func (k *Kubelet) RuntimeInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		op := OperationType(method)
		k.runtimeOps.WithLabelValues(op).Inc()
		k.runtimeDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
		if err != nil {
			k.runtimeErrors.WithLabelValues(op).Inc()
		}
		return err
	}
}

var wordStart = regexp.MustCompile(`([a-z0-9])([A-Z])`)

// OperationType is upstream's operation_type of a CRI method
// ("/runtime.v1.RuntimeService/ListPodSandbox" → "list_podsandbox").
func OperationType(method string) string {
	name := path.Base(method)
	if name == "UpdateContainerResources" {
		return "update_container"
	}
	name = strings.ReplaceAll(name, "PodSandbox", "Podsandbox")
	return strings.ToLower(wordStart.ReplaceAllString(name, "${1}_${2}"))
}

// Probe results, as upstream's prober_probe_total labels them.
const (
	ProbeSuccessful = "successful"
	ProbeFailed     = "failed"
	ProbeUnknown    = "unknown"
)

// ObserveProbe counts one probe of container in pod with its result (one
// of the Probe* constants) and, for a successful one, how long it took.
// probeType is Liveness, Readiness or Startup.
func (k *Kubelet) ObserveProbe(probeType, result string, pod *corev1.Pod, container string, took time.Duration) {
	if k == nil {
		return
	}
	k.probeTotal.WithLabelValues(probeType, result, container, pod.Name, pod.Namespace, string(pod.UID)).Inc()
	if result == ProbeSuccessful {
		k.probeDuration.WithLabelValues(probeType, container, pod.Name, pod.Namespace).Observe(took.Seconds())
	}
}

// ForgetProbe drops the series of a probe that stopped, as upstream's
// probe workers do when they end.
func (k *Kubelet) ForgetProbe(probeType string, pod *corev1.Pod, container string) {
	if k == nil {
		return
	}
	k.probeTotal.DeletePartialMatch(prometheus.Labels{"probe_type": probeType, "container": container, "pod_uid": string(pod.UID)})
	k.probeDuration.DeleteLabelValues(probeType, container, pod.Name, pod.Namespace)
}
