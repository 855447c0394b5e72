package apiserver_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"orch/internal/envtest"
	"orch/internal/pki"
)

// statsKubelet is a kubelet that serves /stats/summary only: the n-th
// request (from 1) gets summary(n), over TLS with client certificates.
type statsKubelet struct {
	host     string
	port     int
	requests atomic.Int32
}

func startStatsKubelet(t *testing.T, bundle *pki.Bundle, summary func(n int) *statsapi.Summary) *statsKubelet {
	t.Helper()
	k := &statsKubelet{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats/summary" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(summary(int(k.requests.Add(1))))
	}))
	cert, err := bundle.ServingCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: bundle.CAPool()}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().(*net.TCPAddr)
	k.host, k.port = addr.IP.String(), addr.Port
	return k
}

// testClock is the apiserver's clock, which the metrics cache ages by.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// sample is CPU and memory stats at t0+offset (nanocores nil: rate unknown).
func sample(offset time.Duration, nanoCores *uint64, totalNs, workingSet uint64) (*statsapi.CPUStats, *statsapi.MemoryStats) {
	at := metav1.NewTime(t0.Add(offset))
	return &statsapi.CPUStats{Time: at, UsageNanoCores: nanoCores, UsageCoreNanoSeconds: &totalNs},
		&statsapi.MemoryStats{Time: at, WorkingSetBytes: &workingSet}
}

func u64(v uint64) *uint64 { return &v }

const mi = 1 << 20

// node1Summary: the node at 500m and 1Gi; ns/web's app 100m 64Mi and
// sidecar 20m 16Mi; ns/db 5m 200Mi; ns/partial has a container without
// memory stats. The n-th summary is sampled 10 s after the one before.
func node1Summary(n int) *statsapi.Summary {
	at := time.Duration(n-1) * 10 * time.Second
	container := func(name string, nanoCores, workingSet uint64) statsapi.ContainerStats {
		c := statsapi.ContainerStats{Name: name}
		c.CPU, c.Memory = sample(at, u64(nanoCores), 1e9, workingSet)
		return c
	}
	pod := func(name string, cs ...statsapi.ContainerStats) statsapi.PodStats {
		return statsapi.PodStats{PodRef: statsapi.PodReference{Namespace: "ns", Name: name}, Containers: cs}
	}
	partial := container("app", 1e6, 0)
	partial.Memory = nil
	sum := &statsapi.Summary{Pods: []statsapi.PodStats{
		pod("web", container("app", 100e6, 64*mi), container("sidecar", 20e6, 16*mi)),
		pod("db", container("db", 5e6, 200*mi)),
		pod("partial", partial),
	}}
	sum.Node.NodeName = "node-1"
	sum.Node.CPU, sum.Node.Memory = sample(at, u64(500e6), 1e12, 1024*mi)
	return sum
}

// node3Summary has no usageNanoCores (as orch's kubelet on its first
// request); the apiserver asks again and takes the rate between the two:
// 0.25 s of CPU in 1 s.
func node3Summary(n int) *statsapi.Summary {
	sum := &statsapi.Summary{}
	sum.Node.CPU, sum.Node.Memory = sample(time.Duration(n-1)*time.Second, nil, 1e9+uint64(n-1)*250e6, 512*mi)
	return sum
}

func TestMetricsAPIAndKubectlTop(t *testing.T) {
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir(), Hostname: "localhost", NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(bundle.AdminCertPEM, bundle.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{now: time.Now()}
	api := envtest.StartWith(t, envtest.Options{Now: clock.Now,
		KubeletTLS: &tls.Config{RootCAs: bundle.CAPool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	client := kubernetes.NewForConfigOrDie(api.Config)
	k1 := startStatsKubelet(t, bundle, node1Summary)
	k3 := startStatsKubelet(t, bundle, node3Summary)
	k4 := startStatsKubelet(t, bundle, node1Summary)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	ctx := context.Background()
	addNode(t, client, "node-1", k1.port, corev1.ConditionTrue)
	addNode(t, client, "node-2", closedPort, corev1.ConditionTrue) // kubelet unreachable
	addNode(t, client, "node-3", k3.port, corev1.ConditionTrue)
	addNode(t, client, "node-4", k4.port, corev1.ConditionFalse) // NotReady: not asked
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, node, app string }{{"web", "node-1", "web"}, {"db", "node-1", "db"}, {"partial", "node-1", "web"}, {"pending", "", "web"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "ns", Labels: map[string]string{"app": p.app}},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
		if _, err := client.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	envtest.KubectlContains(t, api.Config, "NodeMetrics", "api-resources", "--api-group=metrics.k8s.io")
	top := topLines(t, envtest.KubectlContains(t, api.Config, "MEMORY(%)", "top", "node"))
	wantLines(t, top, map[string]string{
		"node-1": "500m 25% 1024Mi 25%", "node-3": "250m 12% 512Mi 12%",
		"node-2": "<unknown> <unknown> <unknown> <unknown>", "node-4": "<unknown> <unknown> <unknown> <unknown>"})
	if k4.requests.Load() != 0 || k3.requests.Load() != 2 {
		t.Errorf("kubelet requests: NotReady node %d (want 0), node-3 %d (want 2: one more for a rate)", k4.requests.Load(), k3.requests.Load())
	}
	top = topLines(t, envtest.KubectlContains(t, api.Config, "web", "top", "pod", "-n", "ns"))
	wantLines(t, top, map[string]string{"web": "120m 80Mi", "db": "5m 200Mi"})
	top = topLines(t, envtest.KubectlContains(t, api.Config, "sidecar", "top", "pod", "-n", "ns", "-l", "app=web", "--containers"))
	wantLines(t, top, map[string]string{"web": "sidecar 20m 16Mi"}) // app 100m 64Mi is the line before
	envtest.KubectlContains(t, api.Config, "500m", "top", "node", "node-1")
	if n := k1.requests.Load(); n != 1 {
		t.Errorf("node-1's kubelet was asked %d times within 15 s, want 1 (cached)", n)
	}

	// The first usage has the default window; 20 s later the kubelet is
	// asked again and the window is the time between its two samples.
	var nodes metricsv1beta1.NodeMetricsList
	getJSON(t, client, "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=name%3Dnode-1", &nodes)
	if len(nodes.Items) != 1 || nodes.Items[0].Window.Duration != 15*time.Second || !nodes.Items[0].Timestamp.Time.Equal(t0) ||
		nodes.Items[0].Labels["name"] != "node-1" {
		t.Fatalf("first node metrics: %+v", nodes.Items)
	}
	clock.Add(20 * time.Second)
	var pm metricsv1beta1.PodMetrics
	getJSON(t, client, "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/web", &pm)
	if pm.Window.Duration != 10*time.Second || !pm.Timestamp.Time.Equal(t0.Add(10*time.Second)) || len(pm.Containers) != 2 ||
		!pm.Containers[0].Usage.Cpu().Equal(resource.MustParse("100m")) || pm.Containers[1].Usage.Memory().Value() != 16*mi {
		t.Fatalf("pod metrics after a second scrape: %+v", pm)
	}
	var pods metricsv1beta1.PodMetricsList
	getJSON(t, client, "/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=metadata.namespace%3Dns,metadata.name%3Ddb", &pods)
	if len(pods.Items) != 1 || pods.Items[0].Name != "db" {
		t.Fatalf("pods by field selector: %+v", pods.Items)
	}

	metricsErrors(t, client)
	out, err := envtest.Kubectl(t, api.Config, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/nope")
	if err == nil || !strings.Contains(out+err.Error(), `nodemetrics.metrics.k8s.io "nope" not found`) {
		t.Errorf("kubectl get --raw of an unknown node: %v %q", err, out)
	}
	envtest.KubectlContains(t, api.Config, `"kind":"NodeMetricsList"`, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes")
}

// metricsErrors checks the not found and bad request answers.
func metricsErrors(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	for path, want := range map[string]string{
		"/apis/metrics.k8s.io/v1beta1/nodes/nope":                 `nodemetrics.metrics.k8s.io "nope" not found`,
		"/apis/metrics.k8s.io/v1beta1/nodes/node-2":               `nodemetrics.metrics.k8s.io "node-2" not found`,
		"/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/nope":    `podmetrics.metrics.k8s.io "ns/nope" not found`,
		"/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/partial": `podmetrics.metrics.k8s.io "ns/partial" not found`,
		"/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/pending": `podmetrics.metrics.k8s.io "ns/pending" not found`,
	} {
		err := client.CoreV1().RESTClient().Get().AbsPath(path).Do(context.Background()).Error()
		if !apierrors.IsNotFound(err) || err.Error() != want {
			t.Errorf("GET %s: %v, want 404 %s", path, err, want)
		}
	}
	err := client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/pods").Param("fieldSelector", "spec.nodeName=node-1").Do(context.Background()).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.nodeName") {
		t.Errorf("unsupported field selector: %v", err)
	}
	err = client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes").Param("watch", "true").Do(context.Background()).Error()
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("watch: %v, want 405", err)
	}
}

func addNode(t *testing.T, client kubernetes.Interface, name string, port int, ready corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"name": name}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	node.Status.Capacity = node.Status.Allocatable
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// topLines maps the first field of each line kubectl top printed to the rest.
func topLines(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		lines[f[0]] = strings.Join(f[1:], " ")
	}
	return lines
}

func wantLines(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d lines %q, want %d", len(got), got, len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
}

func getJSON(t *testing.T, client kubernetes.Interface, path string, into any) {
	t.Helper()
	raw, err := client.CoreV1().RESTClient().Get().RequestURI(path).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, raw)
	}
}
