package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/metrics"
)

// oneContainer is a runtime with one container of pod default/web using
// 2.5 s of CPU and 3 MiB of working set.
type oneContainer struct{}

func (oneContainer) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return nil, nil
}

func (oneContainer) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	at := time.Now().UnixNano()
	return []*runtimeapi.ContainerStats{{
		Attributes: &runtimeapi.ContainerAttributes{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Labels: map[string]string{labelPodUID: "u1", labelPodName: "web", labelPodNamespace: "default"}},
		Cpu:           &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 2_500_000_000}},
		Memory:        &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 3 << 20}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at, UsedBytes: &runtimeapi.UInt64Value{Value: 4096}},
	}}, nil
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape answered %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func wantLines(t *testing.T, body string, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		found := false
		for _, l := range strings.Split(body, "\n") {
			found = found || strings.HasPrefix(l, p)
		}
		if !found {
			t.Errorf("no line begins with %q in:\n%s", p, body)
		}
	}
}

func TestResourceAndCadvisorMetrics(t *testing.T) {
	stats := newStatsCollector(oneContainer{}, "node-1", t.TempDir(), func() []*corev1.Pod { return nil }, time.Now)
	wantLines(t, scrape(t, metrics.Handler(resourceMetrics(stats))),
		"node_cpu_usage_seconds_total ",
		"node_memory_working_set_bytes ",
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2.5 `,
		`container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 3.145728e+06 `,
		`pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2.5 `,
		`pod_memory_working_set_bytes{namespace="default",pod="web"} 3.145728e+06 `,
		"resource_scrape_error 0",
	)
	wantLines(t, scrape(t, metrics.Handler(cadvisorMetrics(stats))),
		`container_cpu_usage_seconds_total{container="",id="/",namespace="",pod=""} `,
		`container_cpu_usage_seconds_total{container="app",id="",namespace="default",pod="web"} 2.5 `,
		`container_memory_working_set_bytes{container="",id="",namespace="default",pod="web"} 3.145728e+06 `,
		`container_fs_usage_bytes{container="app",id="",namespace="default",pod="web"} 4096 `,
	)
}
