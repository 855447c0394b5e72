package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// scrapeLimit bounds the stats a scrape of /metrics/resource or
// /metrics/cadvisor waits for.
const scrapeLimit = 10 * time.Second

// summaryCollector turns the stats summary into Prometheus metrics at each
// scrape: resourceMetrics (/metrics/resource, what metrics-server reads)
// and cadvisorMetrics (/metrics/cadvisor) are two views of it.
type summaryCollector struct {
	stats *statsCollector
	descs []*prometheus.Desc
	emit  func(ch chan<- prometheus.Metric, sum *statsapi.Summary, err error)
}

func (c summaryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c summaryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeLimit)
	defer cancel()
	sum, err := c.stats.summary(ctx)
	c.emit(ch, sum, err)
}

// sample sends one sample of d at the time of the stats it comes from.
func sample(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, at time.Time, v uint64, labels ...string) {
	m := prometheus.MustNewConstMetric(d, t, float64(v), labels...)
	if !at.IsZero() {
		m = prometheus.NewMetricWithTimestamp(at, m)
	}
	ch <- m
}

// resourceMetrics are upstream's /metrics/resource: the node's, pods' and
// containers' CPU time and working set.
func resourceMetrics(stats *statsCollector) prometheus.Collector {
	var (
		nodeCPU   = prometheus.NewDesc("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", nil, nil)
		nodeMem   = prometheus.NewDesc("node_memory_working_set_bytes", "Current working set of the node in bytes", nil, nil)
		podCPU    = prometheus.NewDesc("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
		podMem    = prometheus.NewDesc("pod_memory_working_set_bytes", "Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
		ctrCPU    = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
		ctrMem    = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
		scrapeErr = prometheus.NewDesc("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	)
	return summaryCollector{stats: stats, descs: []*prometheus.Desc{nodeCPU, nodeMem, podCPU, podMem, ctrCPU, ctrMem, scrapeErr},
		emit: func(ch chan<- prometheus.Metric, sum *statsapi.Summary, err error) {
			if err != nil {
				ch <- prometheus.MustNewConstMetric(scrapeErr, prometheus.GaugeValue, 1)
				return
			}
			ch <- prometheus.MustNewConstMetric(scrapeErr, prometheus.GaugeValue, 0)
			cpu := func(d *prometheus.Desc, s *statsapi.CPUStats, labels ...string) {
				if s != nil && s.UsageCoreNanoSeconds != nil {
					ch <- prometheus.NewMetricWithTimestamp(s.Time.Time, prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*s.UsageCoreNanoSeconds)/1e9, labels...))
				}
			}
			mem := func(d *prometheus.Desc, s *statsapi.MemoryStats, labels ...string) {
				if s != nil && s.WorkingSetBytes != nil {
					sample(ch, d, prometheus.GaugeValue, s.Time.Time, *s.WorkingSetBytes, labels...)
				}
			}
			cpu(nodeCPU, sum.Node.CPU)
			mem(nodeMem, sum.Node.Memory)
			for _, p := range sum.Pods {
				cpu(podCPU, p.CPU, p.PodRef.Name, p.PodRef.Namespace)
				mem(podMem, p.Memory, p.PodRef.Name, p.PodRef.Namespace)
				for _, c := range p.Containers {
					cpu(ctrCPU, c.CPU, c.Name, p.PodRef.Name, p.PodRef.Namespace)
					mem(ctrMem, c.Memory, c.Name, p.PodRef.Name, p.PodRef.Namespace)
				}
			}
		}}
}

// cadvisorMetrics are the part of upstream's /metrics/cadvisor the stats
// summary has: CPU, memory and writable-layer usage of the node (id "/"),
// each pod (container "") and each container.
func cadvisorMetrics(stats *statsCollector) prometheus.Collector {
	labels := []string{"container", "id", "namespace", "pod"}
	var (
		cpu  = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", labels, nil)
		ws   = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set in bytes.", labels, nil)
		use  = prometheus.NewDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", labels, nil)
		rss  = prometheus.NewDesc("container_memory_rss", "Size of RSS in bytes.", labels, nil)
		fsUs = prometheus.NewDesc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", labels, nil)
	)
	return summaryCollector{stats: stats, descs: []*prometheus.Desc{cpu, ws, use, rss, fsUs},
		emit: func(ch chan<- prometheus.Metric, sum *statsapi.Summary, err error) {
			if err != nil {
				return
			}
			one := func(c *statsapi.CPUStats, m *statsapi.MemoryStats, fs *statsapi.FsStats, l ...string) {
				if c != nil && c.UsageCoreNanoSeconds != nil {
					ch <- prometheus.NewMetricWithTimestamp(c.Time.Time, prometheus.MustNewConstMetric(cpu, prometheus.CounterValue, float64(*c.UsageCoreNanoSeconds)/1e9, l...))
				}
				if m != nil {
					for d, v := range map[*prometheus.Desc]*uint64{ws: m.WorkingSetBytes, use: m.UsageBytes, rss: m.RSSBytes} {
						if v != nil {
							sample(ch, d, prometheus.GaugeValue, m.Time.Time, *v, l...)
						}
					}
				}
				if fs != nil && fs.UsedBytes != nil {
					sample(ch, fsUs, prometheus.GaugeValue, fs.Time.Time, *fs.UsedBytes, l...)
				}
			}
			one(sum.Node.CPU, sum.Node.Memory, nil, "", "/", "", "")
			for _, p := range sum.Pods {
				one(p.CPU, p.Memory, nil, "", "", p.PodRef.Namespace, p.PodRef.Name)
				for _, c := range p.Containers {
					one(c.CPU, c.Memory, c.Rootfs, c.Name, "", p.PodRef.Namespace, p.PodRef.Name)
				}
			}
		}}
}
