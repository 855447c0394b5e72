package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Labels the kubelet puts on sandboxes and containers (internal/kubelet/podconfig).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// statsCollector builds /stats/summary. CPU rates (usageNanoCores) the
// runtime does not give are computed, as upstream's CRI stats provider
// computes them, from the previous cumulative sample of the same
// container, pod or node: the first scrape has none.
type statsCollector struct {
	rt   StatsSource
	node string
	root string
	pods func() []*corev1.Pod
	now  func() time.Time

	mu   sync.Mutex
	prev map[string]cpuSample
}

type cpuSample struct {
	at    int64 // nanoseconds since the epoch
	usage uint64
	rate  *uint64 // computed from the sample before
}

func newStatsCollector(rt StatsSource, node, root string, pods func() []*corev1.Pod, now func() time.Time) *statsCollector {
	return &statsCollector{rt: rt, node: node, root: root, pods: pods, now: now, prev: map[string]cpuSample{}}
}

func (s *Server) serveSummary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.stats.summary(r.Context())
	if err != nil {
		http.Error(w, "Internal Error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(sum)
}

// summary is the node's and its pods' usage now.
func (c *statsCollector) summary(ctx context.Context) (*statsapi.Summary, error) {
	node, err := c.nodeStats()
	if err != nil {
		return nil, err
	}
	containers, err := c.rt.ListContainerStats(ctx, nil)
	if err != nil {
		return nil, err
	}
	sandboxes, _ := c.rt.ListPodSandboxStats(ctx, nil) // containerd may not serve it; then pods sum their containers
	return &statsapi.Summary{Node: *node, Pods: c.podStats(containers, sandboxes)}, nil
}

func (c *statsCollector) podStats(containers []*runtimeapi.ContainerStats, sandboxes []*runtimeapi.PodSandboxStats) []statsapi.PodStats {
	byUID := map[string]*statsapi.PodStats{}
	starts := map[string]metav1.Time{}
	for _, p := range c.pods() {
		if p.Status.StartTime != nil {
			starts[string(p.UID)] = *p.Status.StartTime
		}
	}
	pod := func(labels map[string]string, meta *runtimeapi.PodSandboxMetadata) *statsapi.PodStats {
		uid, name, ns := labels[labelPodUID], labels[labelPodName], labels[labelPodNamespace]
		if meta != nil {
			uid, name, ns = meta.Uid, meta.Name, meta.Namespace
		}
		if uid == "" {
			return nil
		}
		p, ok := byUID[uid]
		if !ok {
			p = &statsapi.PodStats{PodRef: statsapi.PodReference{Name: name, Namespace: ns, UID: uid}, StartTime: starts[uid], Containers: []statsapi.ContainerStats{}}
			byUID[uid] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		a := sb.GetAttributes()
		p := pod(a.GetLabels(), a.GetMetadata())
		if p == nil || sb.GetLinux() == nil {
			continue
		}
		p.CPU = c.cpu("pod/"+a.GetId(), sb.GetLinux().GetCpu())
		p.Memory = memory(sb.GetLinux().GetMemory())
	}
	// The newest stats of each container name (older attempts may linger).
	latest := map[string]*runtimeapi.ContainerStats{}
	for _, cs := range containers {
		a := cs.GetAttributes()
		key := a.GetLabels()[labelPodUID] + "/" + a.GetMetadata().GetName()
		if old, ok := latest[key]; !ok || cs.GetCpu().GetTimestamp() > old.GetCpu().GetTimestamp() {
			latest[key] = cs
		}
	}
	sums := map[string]*[2]uint64{} // pod UID → summed usage ns and working set, for pods without sandbox stats
	for _, cs := range latest {
		a := cs.GetAttributes()
		p := pod(a.GetLabels(), nil)
		if p == nil {
			continue
		}
		ct := statsapi.ContainerStats{Name: a.GetMetadata().GetName(), CPU: c.cpu("ctr/"+a.GetId(), cs.GetCpu()), Memory: memory(cs.GetMemory())}
		if fs := cs.GetWritableLayer(); fs != nil {
			ct.Rootfs = &statsapi.FsStats{Time: nsTime(fs.GetTimestamp()), UsedBytes: value(fs.GetUsedBytes()), InodesUsed: value(fs.GetInodesUsed())}
		}
		p.Containers = append(p.Containers, ct)
		sum := sums[p.PodRef.UID]
		if sum == nil {
			sum = &[2]uint64{}
			sums[p.PodRef.UID] = sum
		}
		if ct.CPU != nil && ct.CPU.UsageCoreNanoSeconds != nil {
			sum[0] += *ct.CPU.UsageCoreNanoSeconds
		}
		if ct.Memory != nil && ct.Memory.WorkingSetBytes != nil {
			sum[1] += *ct.Memory.WorkingSetBytes
		}
	}
	now := c.now()
	out := make([]statsapi.PodStats, 0, len(byUID))
	for uid, p := range byUID {
		if p.CPU == nil && sums[uid] != nil {
			p.CPU = c.cpu("pod/"+uid, &runtimeapi.CpuUsage{Timestamp: now.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: sums[uid][0]}})
		}
		if p.Memory == nil && sums[uid] != nil {
			p.Memory = &statsapi.MemoryStats{Time: metav1.NewTime(now), WorkingSetBytes: ptr(sums[uid][1])}
		}
		sort.Slice(p.Containers, func(i, j int) bool { return p.Containers[i].Name < p.Containers[j].Name })
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].PodRef, out[j].PodRef
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	return out
}

// cpu converts the runtime's CPU usage, computing usageNanoCores from the
// previous sample under key when the runtime leaves it out.
func (c *statsCollector) cpu(key string, u *runtimeapi.CpuUsage) *statsapi.CPUStats {
	if u == nil {
		return nil
	}
	st := &statsapi.CPUStats{Time: nsTime(u.GetTimestamp()), UsageCoreNanoSeconds: value(u.GetUsageCoreNanoSeconds()), UsageNanoCores: value(u.GetUsageNanoCores())}
	if st.UsageCoreNanoSeconds != nil && st.UsageNanoCores == nil {
		st.UsageNanoCores = c.rate(key, u.GetTimestamp(), *st.UsageCoreNanoSeconds)
	}
	return st
}

// rate is the usage per second (in nanocores) since the previous sample
// under key, and remembers this one; nil without a usable previous sample.
func (c *statsCollector) rate(key string, at int64, usage uint64) *uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.prev[key]
	if ok && at == prev.at {
		return prev.rate // the same sample again (runtimes cache stats)
	}
	var r *uint64
	if ok && at > prev.at && usage >= prev.usage {
		r = ptr(uint64(float64(usage-prev.usage) / float64(at-prev.at) * 1e9))
	}
	c.prev[key] = cpuSample{at: at, usage: usage, rate: r}
	return r
}

func memory(m *runtimeapi.MemoryUsage) *statsapi.MemoryStats {
	if m == nil {
		return nil
	}
	return &statsapi.MemoryStats{
		Time: nsTime(m.GetTimestamp()), WorkingSetBytes: value(m.GetWorkingSetBytes()), AvailableBytes: value(m.GetAvailableBytes()),
		UsageBytes: value(m.GetUsageBytes()), RSSBytes: value(m.GetRssBytes()), PageFaults: value(m.GetPageFaults()), MajorPageFaults: value(m.GetMajorPageFaults()),
	}
}

func value(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptr(v.Value)
}

func ptr[T any](v T) *T { return &v }

func nsTime(ns int64) metav1.Time { return metav1.NewTime(time.Unix(0, ns)) }
