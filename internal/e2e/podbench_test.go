package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"orch/internal/e2e/bench"
	"orch/internal/kubelet/images"
)

// BenchmarkPodStartup measures pod start-up on a real agent (its own
// containerd, the busybox image already imported): the time from the
// create call to the pod's status saying Running, for one pod at a time
// (ORCH_BENCH_POD_RUNS runs, default 10) and for 30 pods created at once;
// and the resident memory of the agent process and of its containerd,
// idle and with the 30 pods running. Run with -benchtime 1x (make bench);
// ORCH_BENCH_VERBOSE=1 logs each pod's times to binding and to Running.
func BenchmarkPodStartup(b *testing.B) {
	s := StartServer(b)
	a := StartAgent(b, s, "bench-node")
	client := s.client(b)
	waitNodeReady(b, client, "bench-node")
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("ORCH_BENCH_POD_RUNS")); err == nil && n > 0 {
		runs = n
	}
	// A first pod unpacks the image and starts the pause image: what
	// follows measures pods on a warm node.
	startPods(b, client, "warm", 1)
	deletePods(b, client)
	time.Sleep(5 * time.Second) // let the node settle
	idleAgent, idleContainerd := rssMiB(b, a.cmd.Process.Pid), containerdMemory(a.DataDir)

	var single []time.Duration
	for i := range runs {
		single = append(single, startPods(b, client, fmt.Sprintf("one-%d", i), 1)...)
		deletePods(b, client)
	}
	batch := startPods(b, client, "batch", 30)
	time.Sleep(5 * time.Second)
	busyAgent, busyContainerd := rssMiB(b, a.cmd.Process.Pid), containerdMemory(a.DataDir)
	deletePods(b, client)

	p := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(single, 0.5), "1pod-p50-ms")
	b.ReportMetric(p(single, 0.99), "1pod-p99-ms")
	b.ReportMetric(p(batch, 0.5), "30pods-p50-ms")
	b.ReportMetric(p(batch, 0.99), "30pods-p99-ms")
	b.ReportMetric(idleAgent, "agent-idle-MiB")
	b.ReportMetric(busyAgent, "agent-30pods-MiB")
	b.ReportMetric(mib(idleContainerd.RSS), "containerd-idle-MiB")
	b.ReportMetric(mib(busyContainerd.RSS), "containerd-30pods-MiB")
	// orch's containerd is orch's binary: its file pages are shared with
	// the agent's; what it adds is mostly its anonymous memory.
	b.ReportMetric(mib(idleContainerd.Anon), "containerd-idle-anon-MiB")
	b.ReportMetric(mib(busyContainerd.Anon), "containerd-30pods-anon-MiB")
	b.Logf("one pod at a time (%d runs): p50 %.0f ms, p99 %.0f ms; 30 at once: p50 %.0f ms, p99 %.0f ms",
		len(single), p(single, 0.5), p(single, 0.99), p(batch, 0.5), p(batch, 0.99))
	b.Logf("RSS MiB: agent idle %.1f, with 30 pods %.1f; its containerd idle %.1f (anon %.1f), with 30 pods %.1f (anon %.1f) (shims not counted)",
		idleAgent, busyAgent, mib(idleContainerd.RSS), mib(idleContainerd.Anon), mib(busyContainerd.RSS), mib(busyContainerd.Anon))
}

// startPods creates n busybox pods named prefix-<i> at once and returns
// each one's time from its create call to a watch event showing it Running.
func startPods(b testing.TB, client kubernetes.Interface, prefix string, n int) []time.Duration {
	b.Helper()
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	created := map[string]time.Time{}
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, err := pods.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "startup"}},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{
					Name: "main", Image: images.BusyboxRef, ImagePullPolicy: corev1.PullNever,
					Command: []string{"sleep", "3600"}}}},
			}, metav1.CreateOptions{})
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			created[name] = start
			mu.Unlock()
		}()
	}
	running, bound := map[string]time.Time{}, map[string]time.Time{}
	timeout := time.After(3 * time.Minute)
	for len(running) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("the pod watch ended")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted || !strings.HasPrefix(p.Name, prefix+"-") {
				continue
			}
			if _, seen := bound[p.Name]; !seen && p.Spec.NodeName != "" {
				bound[p.Name] = time.Now()
			}
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			if _, seen := running[p.Name]; !seen {
				running[p.Name] = time.Now()
			}
		case <-timeout:
			b.Fatalf("only %d of %d pods Running after 3 minutes", len(running), n)
		}
	}
	wg.Wait()
	var out []time.Duration
	for name, at := range running {
		out = append(out, at.Sub(created[name]))
		if os.Getenv("ORCH_BENCH_VERBOSE") != "" {
			b.Logf("%s: bound after %v, Running after %v", name, bound[name].Sub(created[name]), at.Sub(created[name]))
		}
	}
	return out
}

// deletePods deletes the benchmark's pods and waits until they are gone.
func deletePods(b testing.TB, client kubernetes.Interface) {
	b.Helper()
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)},
		metav1.ListOptions{LabelSelector: "bench=startup"}); err != nil {
		b.Fatal(err)
	}
	eventually(b, 2*time.Minute, func() string {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "bench=startup"})
		if err != nil || len(list.Items) > 0 {
			return fmt.Sprintf("pods left: %v", err)
		}
		return ""
	})
}

// rssMiB is the VmRSS of process pid in MiB.
func rssMiB(b testing.TB, pid int) float64 {
	b.Helper()
	m, err := bench.ReadMemory(pid)
	if err != nil {
		b.Fatal(err)
	}
	return float64(m.RSS) / (1 << 20)
}

// containerdMemory is the memory of the containerd of the agent with
// dataDir (its shims aside); zero if it is not found.
func containerdMemory(dataDir string) bench.Memory {
	for _, p := range processesMentioning(filepath.Join(dataDir, "agent", "etc", "containerd")) {
		pid, _, _ := strings.Cut(p, ":")
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		n, err := strconv.Atoi(pid)
		if err != nil || strings.TrimSpace(string(comm)) != "containerd" {
			continue
		}
		if m, err := bench.ReadMemory(n); err == nil {
			return m
		}
	}
	return bench.Memory{}
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// BenchmarkFirstPod measures a node's start from nothing: `orch server`
// (with its agent) on a fresh data dir — the runtime it carries written
// out, containerd started, the pause and busybox images imported — to its
// first pod Running. It reports the time to a ready apiserver (the
// harness's readiness: /readyz and the default namespaces) and to the pod
// Running, both from the server's exec; the pod is created as soon as
// the API accepts it. The busybox archive is in the images directory
// before the start (writeBusyboxImage). Run with -benchtime 1x -count N (docs/benchmarks.md).
func BenchmarkFirstPod(b *testing.B) {
	for range b.N {
		start := time.Now()
		s := StartServerWithAgent(b)
		apiReady := time.Since(start)
		client := s.client(b)
		ctx := context.Background()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "first"},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{
				Name: "main", Image: images.BusyboxRef, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}}},
		}
		// The default ServiceAccount may not exist yet: admission refuses
		// the pod until it does.
		for {
			_, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			if err == nil {
				break
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("create the first pod: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for {
			p, err := client.CoreV1().Pods("default").Get(ctx, "first", metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodRunning {
				break
			}
			if time.Since(start) > 3*time.Minute {
				b.Fatalf("the first pod is not Running after 3 minutes: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		running := time.Since(start)
		b.ReportMetric(float64(apiReady.Milliseconds()), "apiready-ms")
		b.ReportMetric(float64(running.Milliseconds()), "firstpod-ms")
		b.Logf("fresh start: API ready after %v, first pod Running after %v", apiReady.Round(time.Millisecond), running.Round(time.Millisecond))
		s.Kubectl(b, "delete", "pod", "first", "--timeout=60s")
		s.Stop()
	}
}
