package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOperationType(t *testing.T) {
	for method, want := range map[string]string{
		"/runtime.v1.RuntimeService/ListPodSandbox":           "list_podsandbox",
		"/runtime.v1.RuntimeService/RunPodSandbox":            "run_podsandbox",
		"/runtime.v1.RuntimeService/PodSandboxStatus":         "podsandbox_status",
		"/runtime.v1.RuntimeService/ListPodSandboxStats":      "list_podsandbox_stats",
		"/runtime.v1.RuntimeService/UpdateContainerResources": "update_container",
		"/runtime.v1.RuntimeService/ExecSync":                 "exec_sync",
		"/runtime.v1.ImageService/ImageFsInfo":                "image_fs_info",
		"/runtime.v1.ImageService/PullImage":                  "pull_image",
		"/runtime.v1.RuntimeService/Version":                  "version",
	} {
		if got := OperationType(method); got != want {
			t.Errorf("OperationType(%q) = %q, want %q", method, got, want)
		}
	}
}

func body(t *testing.T, k *Kubelet, probes bool) string {
	t.Helper()
	h := k.Handler()
	if probes {
		h = k.ProbesHandler()
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func TestRuntimeInterceptor(t *testing.T) {
	k := New("n1")
	i := k.RuntimeInterceptor()
	ok := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	bad := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		return errors.New("gone")
	}
	i(context.Background(), "/runtime.v1.RuntimeService/ListContainers", nil, nil, nil, ok)
	i(context.Background(), "/runtime.v1.RuntimeService/ListContainers", nil, nil, nil, ok)
	if err := i(context.Background(), "/runtime.v1.RuntimeService/StopContainer", nil, nil, nil, bad); err == nil {
		t.Error("the interceptor hid the call's error")
	}
	got := body(t, k, false)
	for _, want := range []string{
		`kubelet_node_name{node="n1"} 1`,
		`kubelet_runtime_operations_total{operation_type="list_containers"} 2`,
		`kubelet_runtime_operations_total{operation_type="stop_container"} 1`,
		`kubelet_runtime_operations_errors_total{operation_type="stop_container"} 1`,
		`kubelet_runtime_operations_duration_seconds_count{operation_type="list_containers"} 2`,
		"go_goroutines ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `errors_total{operation_type="list_containers"}`) {
		t.Error("a call that succeeded counted as an error")
	}
}

func TestProbes(t *testing.T) {
	k := New("n1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"}}
	k.ObserveProbe("Readiness", ProbeSuccessful, pod, "app", 20*time.Millisecond)
	k.ObserveProbe("Readiness", ProbeFailed, pod, "app", time.Second)
	k.ObserveProbe("Liveness", ProbeSuccessful, pod, "app", time.Millisecond)
	got := body(t, k, true)
	for _, want := range []string{
		`prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="u1",probe_type="Readiness",result="successful"} 1`,
		`prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="u1",probe_type="Readiness",result="failed"} 1`,
		`prober_probe_duration_seconds_count{container="app",namespace="ns",pod="web",probe_type="Readiness"} 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/metrics/probes lacks %q:\n%s", want, got)
		}
	}
	k.ForgetProbe("Readiness", pod, "app")
	got = body(t, k, true)
	if strings.Contains(got, `probe_type="Readiness"`) || !strings.Contains(got, `probe_type="Liveness"`) {
		t.Errorf("after ForgetProbe(Readiness), want only the liveness series:\n%s", got)
	}
	var none *Kubelet
	none.ObserveProbe("Liveness", ProbeFailed, pod, "app", 0) // no metrics: no panic
}
