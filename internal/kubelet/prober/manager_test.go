package prober

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch/internal/envtest"
)

func TestLivenessFailureThreshold(t *testing.T) {
	h := newHarness(t, func(string) (string, int32) { return "boom", 1 })
	lp := execProbe("live", 10, 3, 1)
	lp.TerminationGracePeriodSeconds = new(int64(7))
	h.Sync(testPod(corev1.Container{Name: "app", LivenessProbe: lp}), "10.0.0.1", running("c1"))
	w := h.worker("c1", liveness)

	if h.LivenessFailed("c1") || !h.Ready("c1") || !h.Started("c1") {
		t.Fatal("before any probe: want alive, ready and started (no readiness or startup probe)")
	}
	h.step(t, 10*time.Second, 1, w) // probes 1 (at once) and 2
	h.step(t, 10*time.Second, 2, w) // probe 3
	envtest.EventuallyTrue(t, "liveness failure", func() bool { return h.LivenessFailed("c1") })
	<-w.done // a failed liveness probe stops until the next instance
	if n := h.rt.count("live"); n != 3 {
		t.Errorf("probes run = %d, want 3", n)
	}
	if h.changes.Load() != 1 || h.lastUID.Load() != types.UID("uid-1") {
		t.Errorf("onChange called %d times (last %v), want once with uid-1", h.changes.Load(), h.lastUID.Load())
	}
	if h.StartupFailed("c1") {
		t.Error("StartupFailed = true, want false (it was the liveness probe)")
	}
	if g := h.LivenessGracePeriod("c1"); g == nil || *g != 7 {
		t.Errorf("LivenessGracePeriod = %v, want 7", g)
	}
	want := "Warning Unhealthy Liveness probe failed: boom"
	if ev := h.drain(); len(ev) != 3 || ev[0] != want || ev[2] != want {
		t.Errorf("events = %q, want 3 × %q", ev, want)
	}

	// The container restarted: a new instance gets a fresh worker.
	h.Sync(testPod(corev1.Container{Name: "app", LivenessProbe: lp}), "10.0.0.1", running("c2"))
	if h.LivenessFailed("c1") || h.LivenessFailed("c2") || h.LivenessGracePeriod("c2") != nil {
		t.Error("after restart: want the old instance forgotten and the new one alive")
	}
	w2 := h.worker("c2", liveness)
	h.waitWaiting(t, w2, 1)
	if n := h.rt.count("live"); n != 4 {
		t.Errorf("probes run = %d, want 4 (the new instance probed at once)", n)
	}
}

func TestReadinessThresholds(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	h := newHarness(t, func(string) (string, int32) {
		if healthy.Load() {
			return "", 0
		}
		return "not yet", 1
	})
	pod := testPod(corev1.Container{Name: "app", ReadinessProbe: execProbe("ready", 5, 2, 2)})
	h.Sync(pod, "10.0.0.1", running("c1"))
	w := h.worker("c1", readiness)
	if h.Ready("c1") {
		t.Fatal("Ready before the first probe; want false")
	}
	h.step(t, 5*time.Second, 1, w) // success 1 (at once), success 2
	envtest.EventuallyTrue(t, "ready", func() bool { return h.Ready("c1") })
	if n := h.rt.count("ready"); n != 2 || h.changes.Load() != 1 {
		t.Errorf("after becoming ready: %d probes, %d changes; want 2, 1", n, h.changes.Load())
	}

	healthy.Store(false)
	h.step(t, 5*time.Second, 2, w) // failure 1: still ready
	h.waitWaiting(t, w, 3)
	if !h.Ready("c1") {
		t.Error("not ready after one failure; want ready until failureThreshold 2")
	}
	h.step(t, 5*time.Second, 3, w) // failure 2
	envtest.EventuallyTrue(t, "not ready", func() bool { return !h.Ready("c1") })
	if h.LivenessFailed("c1") {
		t.Error("a readiness failure made LivenessFailed true")
	}
	if ev := h.drain(); len(ev) != 2 || ev[0] != "Warning Unhealthy Readiness probe failed: not yet" {
		t.Errorf("events = %q", ev)
	}
	h.step(t, 5*time.Second, 4, w) // readiness goes on probing
	h.waitWaiting(t, w, 5)
	if n := h.rt.count("ready"); n != 5 {
		t.Errorf("probes = %d, want 5", n)
	}
}

func TestInitialDelay(t *testing.T) {
	h := newHarness(t, func(string) (string, int32) { return "", 0 })
	p := execProbe("ready", 10, 1, 1)
	p.InitialDelaySeconds = 15
	h.Sync(testPod(corev1.Container{Name: "app", ReadinessProbe: p}), "10.0.0.1", running("c1"))
	w := h.worker("c1", readiness)
	h.step(t, 14*time.Second, 1, w)
	if n := h.rt.count("ready"); n != 0 {
		t.Errorf("probes before initialDelaySeconds = %d, want 0", n)
	}
	h.clock.Step(time.Second)
	envtest.EventuallyTrue(t, "ready", func() bool { return h.Ready("c1") })
	h.step(t, 9*time.Second, 2, w)
	if n := h.rt.count("ready"); n != 1 {
		t.Errorf("probes 9 s after the first = %d, want 1", n)
	}
	h.clock.Step(time.Second)
	envtest.EventuallyTrue(t, "second probe", func() bool { return h.rt.count("ready") == 2 })
}

func TestStartupGatesOtherProbes(t *testing.T) {
	var startupRuns atomic.Int64
	h := newHarness(t, func(cmd string) (string, int32) {
		if cmd == "startup" && startupRuns.Add(1) < 3 {
			return "starting", 1
		}
		return "", 0
	})
	c := corev1.Container{Name: "app",
		StartupProbe:   execProbe("startup", 10, 5, 1),
		LivenessProbe:  execProbe("live", 10, 1, 1),
		ReadinessProbe: execProbe("ready", 10, 1, 1)}
	h.Sync(testPod(c), "10.0.0.1", running("c1"))
	s, l, r := h.worker("c1", startup), h.worker("c1", liveness), h.worker("c1", readiness)

	if h.Started("c1") || h.Ready("c1") || h.LivenessFailed("c1") {
		t.Fatal("at start: want not started, not ready, alive")
	}
	h.step(t, 10*time.Second, 1, s, l, r) // startup fails twice
	for _, w := range []*worker{s, l, r} {
		h.waitWaiting(t, w, 2)
	}
	if n := h.rt.count("live") + h.rt.count("ready"); n != 0 || h.Started("c1") {
		t.Errorf("liveness and readiness probes before the startup probe passed = %d, want 0", n)
	}
	h.clock.Step(10 * time.Second) // startup succeeds
	envtest.EventuallyTrue(t, "started", func() bool { return h.Started("c1") })
	<-s.done // a startup probe stops once it passed
	// Readiness runs at once when startup passed (it waits for no period);
	// liveness at its next period (or at once, if it woke with startup).
	envtest.EventuallyTrue(t, "ready", func() bool { return h.Ready("c1") })
	h.step(t, 10*time.Second, 3, l)
	envtest.EventuallyTrue(t, "liveness probe", func() bool { return h.rt.count("live") >= 1 })
	if n := h.rt.count("startup"); n != 3 {
		t.Errorf("startup probes = %d, want 3", n)
	}
	if ev := h.drain(); len(ev) != 2 || ev[0] != "Warning Unhealthy Startup probe failed: starting" {
		t.Errorf("events = %q", ev)
	}
}

func TestStartupFailure(t *testing.T) {
	h := newHarness(t, func(string) (string, int32) { return "", 1 })
	sp := execProbe("startup", 1, 2, 1)
	sp.TerminationGracePeriodSeconds = new(int64(3))
	h.Sync(testPod(corev1.Container{Name: "app", StartupProbe: sp, ReadinessProbe: execProbe("ready", 1, 1, 1)}), "10.0.0.1", running("c1"))
	s := h.worker("c1", startup)
	h.step(t, time.Second, 1, s)
	envtest.EventuallyTrue(t, "startup failure", func() bool { return h.LivenessFailed("c1") })
	<-s.done
	if !h.StartupFailed("c1") || h.Started("c1") || h.Ready("c1") {
		t.Error("after startup failure: want StartupFailed, not started, not ready")
	}
	if g := h.LivenessGracePeriod("c1"); g == nil || *g != 3 {
		t.Errorf("LivenessGracePeriod = %v, want the startup probe's 3", g)
	}
}

func TestProbeErrorIsNotCounted(t *testing.T) {
	h := newHarness(t, nil)
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}, FailureThreshold: 1}
	h.Sync(testPod(corev1.Container{Name: "app", LivenessProbe: p}), "10.0.0.1", running("c1"))
	w := h.worker("c1", liveness)
	h.step(t, 10*time.Second, 1, w)
	h.waitWaiting(t, w, 2)
	if h.LivenessFailed("c1") || h.changes.Load() != 0 {
		t.Error("an errored probe changed the result")
	}
	want := `Warning Unhealthy Liveness probe errored and resulted in unknown state: port "http" not found`
	if ev := h.drain(); len(ev) != 2 || ev[0] != want {
		t.Errorf("events = %q, want 2 × %q", ev, want)
	}
}

func TestHTTPLivenessEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer srv.Close()
	h := newHarness(t, nil)
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
		FailureThreshold: 1, TimeoutSeconds: 5}
	c := corev1.Container{Name: "app", LivenessProbe: p, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: portOf(t, srv.URL)}}}
	h.Sync(testPod(c), "127.0.0.1", running("c1"))
	envtest.EventuallyTrue(t, "liveness failure", func() bool { return h.LivenessFailed("c1") })
	want := "Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500"
	if ev := h.drain(); len(ev) != 1 || ev[0] != want {
		t.Errorf("events = %q, want %q", ev, want)
	}
}

func TestStartupSuccessTriggersReadiness(t *testing.T) {
	h := newHarness(t, func(string) (string, int32) { return "", 0 })
	sp := execProbe("startup", 10, 1, 1)
	sp.InitialDelaySeconds = 5
	h.Sync(testPod(corev1.Container{Name: "app", StartupProbe: sp, ReadinessProbe: execProbe("ready", 100, 1, 1)}), "10.0.0.1", running("c1"))
	s, r := h.worker("c1", startup), h.worker("c1", readiness)
	h.step(t, 5*time.Second, 1, s, r) // readiness gated at 0 s, next at 100 s
	envtest.EventuallyTrue(t, "ready long before the readiness period", func() bool { return h.Ready("c1") })
	if n := h.rt.count("ready"); n != 1 {
		t.Errorf("readiness probes = %d, want 1", n)
	}
}
