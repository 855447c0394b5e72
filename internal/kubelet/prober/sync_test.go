package prober

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"orch/internal/envtest"
)

func TestRemoveStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t, nil)
	inFlight := make(chan struct{})
	h.rt.fn = func(ctx context.Context, _ string, cmd []string) ([]byte, []byte, int32, error) {
		if cmd[0] == "hang" {
			close(inFlight)
			<-ctx.Done() // a probe in flight is cancelled
			return nil, nil, 0, ctx.Err()
		}
		return nil, nil, 0, nil
	}
	pod := testPod(corev1.Container{Name: "app", LivenessProbe: execProbe("hang", 10, 1, 1), ReadinessProbe: execProbe("ready", 10, 1, 1)})
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", StartupProbe: execProbe("startup", 10, 1, 1)})
	h.Sync(pod, "10.0.0.1", map[string]Running{"app": {ID: "c1", StartedAt: t0}, "side": {ID: "c2", StartedAt: t0}})
	ws := []*worker{h.worker("c1", liveness), h.worker("c1", readiness), h.worker("c2", startup)}
	<-inFlight
	h.waitWaiting(t, ws[1], 1)
	h.Remove(pod.UID)
	for _, w := range ws {
		select {
		case <-w.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%v worker still running after Remove", w.typ)
		}
	}
	if h.LivenessFailed("c1") || !h.Ready("c1") || len(h.pods) != 0 || len(h.byID) != 0 {
		t.Error("Remove kept results")
	}
	envtest.EventuallyTrue(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestSyncStopsExitedContainers(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod(corev1.Container{Name: "app", ReadinessProbe: execProbe("ready", 10, 1, 1)})
	h.Sync(pod, "10.0.0.1", running("c1"))
	w := h.worker("c1", readiness)
	h.Sync(pod, "10.0.0.1", nil) // it exited
	<-w.done
	if h.worker("c1", readiness) != nil || len(h.pods) != 0 {
		t.Error("Sync kept the worker of an exited container")
	}
	// A container without probes, or not running, gets no worker.
	h.Sync(testPod(corev1.Container{Name: "app"}), "10.0.0.1", running("c3"))
	if len(h.byID) != 0 {
		t.Error("a container without probes got a worker")
	}
}

func TestDeletingPodStopsLivenessAndStartup(t *testing.T) {
	h := newHarness(t, func(cmd string) (string, int32) { return "", 0 })
	pod := testPod(corev1.Container{Name: "app",
		LivenessProbe: execProbe("live", 10, 1, 1), ReadinessProbe: execProbe("ready", 10, 1, 1), StartupProbe: execProbe("startup", 10, 1, 1)})
	h.Sync(pod, "10.0.0.1", running("c1"))
	s, l, r := h.worker("c1", startup), h.worker("c1", liveness), h.worker("c1", readiness)
	envtest.EventuallyTrue(t, "started", func() bool { return h.Started("c1") })
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	h.Sync(deleting, "10.0.0.1", running("c1"))
	<-s.done
	<-l.done
	if h.worker("c1", liveness) != nil || h.worker("c1", readiness) != r || h.LivenessFailed("c1") || !h.Started("c1") {
		t.Error("a deleted pod: want liveness and startup stopped (passed), readiness kept")
	}
}

func TestSidecarProbed(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod(corev1.Container{Name: "app"})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "init", ReadinessProbe: execProbe("x", 10, 1, 1)}, // a plain init container has no probes
		{Name: "side", RestartPolicy: &always, ReadinessProbe: execProbe("side", 10, 1, 1)},
	}
	got := probedContainers(pod)
	if len(got) != 1 || got["side"] == nil {
		t.Errorf("probed containers = %v, want only the sidecar", got)
	}
	h := newHarness(t, func(string) (string, int32) { return "no", 1 })
	pod.Spec.InitContainers[1].ReadinessProbe.FailureThreshold = 1
	h.Sync(pod, "10.0.0.1", map[string]Running{"side": {ID: "s1", StartedAt: t0}})
	envtest.EventuallyTrue(t, "event", func() bool { return len(h.drain()) == 1 })
	if h.Ready("s1") {
		t.Error("sidecar ready after a failed probe")
	}
}

// The event's object is the container, as upstream's: the pod with the
// container's field path.
func TestEventReference(t *testing.T) {
	rec := &captureRecorder{refs: make(chan *corev1.ObjectReference, 10)}
	m := newManager(&fakeRuntime{fn: func(context.Context, string, []string) ([]byte, []byte, int32, error) { return nil, nil, 1, nil }},
		rec, nil, nil, testclock.NewFakeClock(t0))
	m.jitter = func(time.Duration) time.Duration { return 0 }
	defer m.Close()
	pod := testPod(corev1.Container{Name: "app", ReadinessProbe: execProbe("r", 10, 1, 1)})
	pod.ResourceVersion = "42"
	m.Sync(pod, "10.0.0.1", running("c1"))
	ref := <-rec.refs
	want := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "web", UID: "uid-1", ResourceVersion: "42", FieldPath: "spec.containers{app}"}
	if *ref != want {
		t.Errorf("event object = %+v, want %+v", *ref, want)
	}
}
