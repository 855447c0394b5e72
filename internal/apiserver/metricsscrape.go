package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The metrics API reads each node's kubelet on demand, as metrics-server
// does on a timer: at most once per metricsMaxAge, with a deadline, every
// node at once (up to metricsParallel).
const (
	metricsMaxAge        = 15 * time.Second
	metricsScrapeTimeout = 5 * time.Second
	metricsParallel      = 32
	// metricsDefaultWindow is the window of a usage whose previous sample
	// the apiserver has not seen (metrics-server's default resolution).
	metricsDefaultWindow = 15 * time.Second
	// metricsPrimeDelay is how long to wait before asking again a kubelet
	// that had no CPU rate yet (orch's computes it between two requests).
	metricsPrimeDelay = time.Second
	// metricsForgetAfter drops the samples of nodes nobody asked about.
	metricsForgetAfter = 10 * time.Minute
	maxSummaryBytes    = 64 << 20
)

// usage is one node's or container's usage at a time, over a window.
type usage struct {
	at     time.Time
	window time.Duration
	cpu    uint64 // nanocores
	memory uint64 // working set bytes
}

type containerUsage struct {
	name string
	usage
}

// podUsage is a pod whose every container has a usage.
type podUsage struct {
	uid        string
	containers []containerUsage
}

// nodeUsage is what one scrape of a node found; node is nil when the
// node's own usage was incomplete. A name may have two pods (a pod
// recreated under its name): they differ by UID.
type nodeUsage struct {
	node *usage
	pods map[types.NamespacedName][]podUsage
}

// cpuSample is the previous CPU sample of a node or container.
type cpuSample struct {
	at     time.Time
	total  uint64 // usageCoreNanoSeconds
	window time.Duration
}

// nodeScrape is the cached scrape of one node.
type nodeScrape struct {
	mu      sync.Mutex // one scrape of a node at a time
	fetched time.Time
	usage   *nodeUsage // nil when the last scrape failed
	samples map[string]cpuSample
}

// metricsScraper caches the usage of every node asked about.
type metricsScraper struct {
	fetch func(ctx context.Context, node *corev1.Node) (*statsapi.Summary, error)
	now   func() time.Time
	log   *slog.Logger

	mu    sync.Mutex
	nodes map[string]*nodeScrape
}

// usage is the usage of the Ready nodes among nodes whose kubelet answered
// (fresh or at most metricsMaxAge old), by node name.
func (sc *metricsScraper) usage(ctx context.Context, nodes []*corev1.Node) map[string]*nodeUsage {
	out := make(map[string]*nodeUsage, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, metricsParallel)
	sc.forget()
	for _, n := range nodes {
		if !nodeReady(n) {
			continue
		}
		e := sc.entry(n.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			if u := e.current(ctx, sc, n); u != nil {
				mu.Lock()
				out[n.Name] = u
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// entry is node's cache entry.
func (sc *metricsScraper) entry(node string) *nodeScrape {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e, ok := sc.nodes[node]
	if !ok {
		e = &nodeScrape{}
		sc.nodes[node] = e
	}
	return e
}

// forget drops the entries of nodes not scraped for metricsForgetAfter
// (deleted nodes, or nobody asked).
func (sc *metricsScraper) forget() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	now := sc.now()
	for name, e := range sc.nodes {
		if e.mu.TryLock() {
			if !e.fetched.IsZero() && now.Sub(e.fetched) > metricsForgetAfter {
				delete(sc.nodes, name)
			}
			e.mu.Unlock()
		}
	}
}

// current is the node's usage, scraped again when the cached one is too
// old. A failed scrape is cached too: the node is left out until the next.
func (e *nodeScrape) current(ctx context.Context, sc *metricsScraper, node *corev1.Node) *nodeUsage {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.fetched.IsZero() && sc.now().Sub(e.fetched) < metricsMaxAge {
		return e.usage
	}
	// A client that goes away does not cut the scrape short for the others.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsScrapeTimeout)
	defer cancel()
	first := e.samples == nil
	sum, err := sc.fetch(ctx, node)
	if err == nil && first && sum.Node.CPU != nil && sum.Node.CPU.UsageNanoCores == nil {
		e.convert(sum)
		select {
		case <-time.After(metricsPrimeDelay):
			sum, err = sc.fetch(ctx, node)
		case <-ctx.Done():
		}
	}
	e.fetched = sc.now()
	if err != nil {
		sc.log.Info("node left out of the metrics API", "node", node.Name, "err", err)
		e.usage = nil
		return nil
	}
	e.usage = e.convert(sum)
	return e.usage
}

// convert turns a summary into usages, with windows from the previous
// samples; CPU is usageNanoCores, or the rate since the previous sample
// when the kubelet leaves it out.
func (e *nodeScrape) convert(sum *statsapi.Summary) *nodeUsage {
	samples := map[string]cpuSample{}
	point := func(key string, cpu *statsapi.CPUStats, mem *statsapi.MemoryStats) *usage {
		if cpu == nil || cpu.Time.IsZero() {
			return nil
		}
		s, rate := cpuSample{at: cpu.Time.Time, window: metricsDefaultWindow}, cpu.UsageNanoCores
		if cpu.UsageCoreNanoSeconds != nil {
			s.total = *cpu.UsageCoreNanoSeconds
		}
		if prev, ok := e.samples[key]; ok && s.at.Equal(prev.at) {
			s.window = prev.window
		} else if ok && s.at.After(prev.at) {
			s.window = s.at.Sub(prev.at)
			if rate == nil && cpu.UsageCoreNanoSeconds != nil && s.total >= prev.total {
				rate = ptrTo(uint64(float64(s.total-prev.total) / s.window.Seconds()))
			}
		}
		samples[key] = s
		if rate == nil || mem == nil || mem.WorkingSetBytes == nil {
			return nil
		}
		return &usage{at: s.at, window: s.window, cpu: *rate, memory: *mem.WorkingSetBytes}
	}
	out := &nodeUsage{node: point("node", sum.Node.CPU, sum.Node.Memory), pods: map[types.NamespacedName][]podUsage{}}
	for _, p := range sum.Pods {
		ref := types.NamespacedName{Namespace: p.PodRef.Namespace, Name: p.PodRef.Name}
		pu, complete := podUsage{uid: p.PodRef.UID}, len(p.Containers) > 0
		for _, c := range p.Containers {
			u := point(fmt.Sprintf("ctr/%s/%s/%s", ref, p.PodRef.UID, c.Name), c.CPU, c.Memory)
			if u == nil {
				complete = false // as metrics-server: all of a pod's containers or none
				continue
			}
			pu.containers = append(pu.containers, containerUsage{name: c.Name, usage: *u})
		}
		if complete {
			out.pods[ref] = append(out.pods[ref], pu)
		}
	}
	e.samples = samples
	return out
}

func ptrTo[T any](v T) *T { return &v }

// nodeReady is true for a node whose Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fetchSummary reads node's /stats/summary through the kubelet client.
func (s *Server) fetchSummary(ctx context.Context, node *corev1.Node) (*statsapi.Summary, error) {
	host, err := kubeletHost(node)
	if err != nil {
		return nil, err
	}
	s.cfg.KubeletClient.init()
	s.cfg.KubeletClient.resolved(host, node.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/stats/summary?only_cpu_and_memory=true", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.KubeletClient.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("GET /stats/summary: %s: %s", resp.Status, body)
	}
	sum := &statsapi.Summary{}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxSummaryBytes)).Decode(sum); err != nil {
		return nil, fmt.Errorf("GET /stats/summary: %w", err)
	}
	return sum, nil
}
