package prober

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"orch/internal/envtest"
)

// fakeRuntime answers ExecSync with fn and counts the calls by command.
type fakeRuntime struct {
	mu    sync.Mutex
	calls map[string]int
	fn    func(ctx context.Context, id string, cmd []string) (stdout, stderr []byte, exitCode int32, err error)
}

func (f *fakeRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[strings.Join(cmd, " ")]++
	fn := f.fn
	f.mu.Unlock()
	if fn == nil {
		return nil, nil, 0, nil
	}
	return fn(ctx, id, cmd)
}

func (f *fakeRuntime) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cmd]
}

// captureRecorder keeps the object of each event.
type captureRecorder struct {
	refs chan *corev1.ObjectReference
}

func (r *captureRecorder) Event(obj runtime.Object, _, _, _ string) {
	r.refs <- obj.(*corev1.ObjectReference)
}

func (r *captureRecorder) Eventf(obj runtime.Object, t, reason, f string, _ ...any) {
	r.Event(obj, t, reason, f)
}

func (r *captureRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, t, reason, f string, _ ...any) {
	r.Event(obj, t, reason, f)
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type harness struct {
	*Manager
	clock    *testclock.FakeClock
	events   *record.FakeRecorder
	changes  atomic.Int64
	rt       *fakeRuntime
	lastUID  atomic.Value
	observed []string // events read so far
}

// newHarness is a prober whose exec probes run exec (nil: they succeed).
func newHarness(t *testing.T, exec func(cmd string) (string, int32)) *harness {
	t.Helper()
	if exec == nil {
		exec = func(string) (string, int32) { return "", 0 }
	}
	h := &harness{clock: testclock.NewFakeClock(t0), events: record.NewFakeRecorder(1000)}
	h.rt = &fakeRuntime{fn: func(_ context.Context, _ string, cmd []string) ([]byte, []byte, int32, error) {
		out, code := exec(strings.Join(cmd, " "))
		return []byte(out), nil, code, nil
	}}
	h.Manager = newManager(h.rt, h.events, func(uid types.UID) { h.lastUID.Store(uid); h.changes.Add(1) }, nil, h.clock)
	h.jitter = func(time.Duration) time.Duration { return 0 }
	t.Cleanup(h.Close)
	return h
}

// worker returns the worker of the container with ID id for t.
func (h *harness) worker(id string, t probeType) *worker {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in := h.byID[id]; in != nil {
		return in.workers[t]
	}
	return nil
}

// waitWaiting waits until the worker went to wait for its next run n times.
func (h *harness) waitWaiting(t *testing.T, w *worker, n int64) {
	t.Helper()
	envtest.EventuallyTrue(t, w.typ.String()+" worker waiting", func() bool { return w.waits.Load() >= n })
}

// step waits until each worker waits for its n-th time, then moves the
// clock on by d.
func (h *harness) step(t *testing.T, d time.Duration, n int64, ws ...*worker) {
	t.Helper()
	for _, w := range ws {
		h.waitWaiting(t, w, n)
	}
	h.clock.Step(d)
}

// drain returns the events recorded so far.
func (h *harness) drain() []string {
	for {
		select {
		case e := <-h.events.Events:
			h.observed = append(h.observed, e)
		default:
			return h.observed
		}
	}
}

func execProbe(cmd string, period, failures, successes int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}},
		PeriodSeconds: period, FailureThreshold: failures, SuccessThreshold: successes, TimeoutSeconds: 1}
}

func testPod(c corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}
}

func running(id string) map[string]Running { return map[string]Running{"app": {ID: id, StartedAt: t0}} }
