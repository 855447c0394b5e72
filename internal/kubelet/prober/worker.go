package prober

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// worker runs one probe of one running container in its own goroutine:
// first after initialDelaySeconds (plus a random part of a period while
// the Manager is young, so that probes do not all fire at once after an
// agent restart), then every periodSeconds, until it is stopped or its
// result ends it (stopsAfter).
type worker struct {
	m         *Manager
	in        *instance
	typ       probeType
	spec      *corev1.Probe
	container corev1.Container
	startedAt time.Time

	ctx       context.Context // cancelled by stop; also cancels a probe in flight
	cancel    context.CancelFunc
	done      chan struct{} // closed when the goroutine ended
	trigger   chan struct{} // a probe now, rather than at the next period
	startOnce sync.Once
	waits     atomic.Int64 // times it waited for its next run (for tests)

	// Guarded by m.mu.
	pod    *corev1.Pod
	podIP  string
	result result

	count counter // owned by the goroutine
}

func (m *Manager) newWorker(in *instance, t probeType, spec *corev1.Probe, c *corev1.Container, startedAt time.Time) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	return &worker{
		m: m, in: in, typ: t, spec: spec, container: *c, startedAt: startedAt,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), trigger: make(chan struct{}, 1),
		result: initialResult(t),
	}
}

// stop ends the worker and cancels its probe in flight; its result is no
// longer set afterwards. m.mu is held.
func (w *worker) stop() { w.cancel() }

func (w *worker) run() {
	defer close(w.done)
	defer func() {
		w.m.mu.Lock()
		pod := w.pod
		w.m.mu.Unlock()
		if pod != nil {
			w.m.Metrics.ForgetProbe(w.typ.String(), pod, w.container.Name)
		}
	}()
	delay, period, _ := timing(w.spec)
	next := w.startedAt.Add(delay)
	if now := w.m.clock.Now(); next.Before(now) {
		next = now
	}
	if w.m.clock.Since(w.m.start) < period {
		next = next.Add(w.m.jitter(period))
	}
	for w.wait(next) {
		began := w.m.clock.Now()
		if !w.probe() {
			return
		}
		next = began.Add(period)
	}
}

// wait waits until at, or a trigger; false when the worker was stopped.
func (w *worker) wait(at time.Time) bool {
	if d := at.Sub(w.m.clock.Now()); d > 0 {
		t := w.m.clock.NewTimer(d)
		defer t.Stop()
		w.waits.Add(1)
		select {
		case <-t.C():
		case <-w.trigger:
		case <-w.ctx.Done():
		}
	}
	return w.ctx.Err() == nil
}

// probe runs the probe once (unless the container has not started and
// this is not its startup probe), records its event, counts its result
// and sets it when it reached its threshold. It returns whether the worker
// goes on.
func (w *worker) probe() bool {
	m := w.m
	m.mu.Lock()
	pod, podIP, gated := w.pod, w.podIP, w.typ != startup && !w.in.started()
	m.mu.Unlock()
	if gated {
		return true
	}
	began := m.clock.Now()
	o, output, err := m.run(w.ctx, w.spec, target{container: &w.container, containerID: w.in.id, podIP: podIP})
	if w.ctx.Err() != nil {
		return false
	}
	if err == nil { // as upstream: a probe that errored is not counted
		m.Metrics.ObserveProbe(w.typ.String(), o.metricResult(), pod, w.container.Name, m.clock.Since(began))
	}
	r, counted, ev := verdict(w.typ, o, output, err)
	if ev != nil {
		m.log.Debug("probe", "pod", pod.Namespace+"/"+pod.Name, "container", w.container.Name, "type", w.typ.String(), "outcome", string(o), "message", ev.Message)
		m.record(pod, &w.container, ev)
	}
	if !counted || !w.count.observe(r, w.spec) {
		return true
	}
	if m.set(w, r) && m.onChange != nil {
		m.onChange(pod.UID)
	}
	return !stopsAfter(w.typ, r)
}

// set stores r as w's result, unless w was stopped, and reports whether
// the result changed. A startup probe that passed triggers the readiness
// probe at once.
func (m *Manager) set(w *worker, r result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.ctx.Err() != nil || w.result == r {
		return false
	}
	w.result = r
	if rw := w.in.workers[readiness]; w.typ == startup && r == success && rw != nil {
		select {
		case rw.trigger <- struct{}{}:
		default:
		}
	}
	return true
}

// record records ev on the probed container of pod, as upstream: on the
// pod, with the container's field path.
func (m *Manager) record(pod *corev1.Pod, c *corev1.Container, ev *event) {
	if m.recorder == nil {
		return
	}
	path := fmt.Sprintf("spec.containers{%s}", c.Name)
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			path = fmt.Sprintf("spec.initContainers{%s}", c.Name)
		}
	}
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: path,
	}
	m.recorder.Event(ref, ev.Type, ev.Reason, ev.Message)
}
