package prober

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/metrics"
)

// Runtime runs the commands of exec probes in containers.
type Runtime interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

var (
	_ Runtime = (*cri.Runtime)(nil)
	_ Runtime = (*cri.Fake)(nil)
)

// Running is the running instance of a container: its runtime ID and when
// it started (initialDelaySeconds counts from then).
type Running struct {
	ID        string
	StartedAt time.Time
}

// Manager runs the probes of the running containers of a node's pods and
// keeps their results. Its methods are safe to call concurrently.
type Manager struct {
	rt       Runtime
	recorder record.EventRecorder
	onChange func(types.UID)
	log      *slog.Logger
	clock    clock.Clock
	jitter   func(period time.Duration) time.Duration
	http     *httpProber
	start    time.Time

	// Metrics counts the probes (prober_probe_total); nil for none. Set
	// it before the first Sync.
	Metrics *metrics.Kubelet

	mu   sync.Mutex
	pods map[types.UID]map[string]*instance // by pod UID, then container name
	byID map[string]*instance               // by container ID
}

// instance is a running container that has probes, and its workers (nil
// for the probe types it has not, or no longer, got).
type instance struct {
	id      string
	podUID  types.UID
	workers [numProbeTypes]*worker
}

// NewManager returns a Manager that runs exec probes through rt, records
// probe events with recorder and calls onChange with a pod's UID when a
// probe result of that pod changed (both may be nil).
func NewManager(rt Runtime, recorder record.EventRecorder, onChange func(podUID types.UID), log *slog.Logger) *Manager {
	return newManager(rt, recorder, onChange, log, clock.RealClock{})
}

func newManager(rt Runtime, recorder record.EventRecorder, onChange func(types.UID), log *slog.Logger, clk clock.Clock) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		rt: rt, recorder: recorder, onChange: onChange, log: log, clock: clk,
		jitter: func(period time.Duration) time.Duration { return rand.N(period) },
		http:   newHTTPProber(),
		start:  clk.Now(),
		pods:   map[types.UID]map[string]*instance{},
		byID:   map[string]*instance{},
	}
}

// Sync starts probe workers for the running containers of pod that have
// probes, and stops those of containers that are no longer running or run
// as a new instance (another ID). running maps a container's name to its
// current running instance; podIP is the default host of httpGet,
// tcpSocket and grpc probes (the node's IP for a hostNetwork pod). Call it
// on every sync of the pod, also when containers exited. Once the pod is
// being deleted, its liveness and startup probes stop (and count as
// passed), as upstream's.
func (m *Manager) Sync(pod *corev1.Pod, podIP string, running map[string]Running) {
	m.mu.Lock()
	defer m.mu.Unlock()
	probed := probedContainers(pod)
	insts := m.pods[pod.UID]
	for name, in := range insts {
		if r, ok := running[name]; !ok || r.ID != in.id || probed[name] == nil {
			m.drop(in)
			delete(insts, name)
		}
	}
	deleting := pod.DeletionTimestamp != nil
	for name, c := range probed {
		r, ok := running[name]
		if !ok || r.ID == "" {
			continue
		}
		if insts == nil {
			insts = map[string]*instance{}
			m.pods[pod.UID] = insts
		}
		in := insts[name]
		if in == nil {
			in = &instance{id: r.ID, podUID: pod.UID}
			for t := range numProbeTypes {
				if spec := t.spec(c); spec != nil && (!deleting || t == readiness) {
					in.workers[t] = m.newWorker(in, t, spec, c, r.StartedAt)
				}
			}
			insts[name], m.byID[r.ID] = in, in
		}
		for t, w := range in.workers {
			if w == nil {
				continue
			}
			if deleting && probeType(t) != readiness {
				w.stop()
				in.workers[t] = nil
				continue
			}
			w.pod, w.podIP = pod, podIP
			w.startOnce.Do(func() { go w.run() })
		}
	}
	if len(insts) == 0 {
		delete(m.pods, pod.UID)
	}
}

// probedContainers returns the containers of pod that have a probe, by
// name: its containers and its restartable init containers (sidecars).
func probedContainers(pod *corev1.Pod) map[string]*corev1.Container {
	out := map[string]*corev1.Container{}
	add := func(c *corev1.Container) {
		if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil {
			out[c.Name] = c
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// drop stops the workers of in and forgets its results. m.mu is held.
func (m *Manager) drop(in *instance) {
	for _, w := range in.workers {
		if w != nil {
			w.stop()
		}
	}
	delete(m.byID, in.id)
}

// Remove stops the probes of a pod that is gone and forgets their results.
// It does not wait for probes in flight, which are cancelled.
func (m *Manager) Remove(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, in := range m.pods[podUID] {
		m.drop(in)
	}
	delete(m.pods, podUID)
}

// Close stops all probes, as Remove for every pod.
func (m *Manager) Close() {
	m.mu.Lock()
	uids := make([]types.UID, 0, len(m.pods))
	for uid := range m.pods {
		uids = append(uids, uid)
	}
	m.mu.Unlock()
	for _, uid := range uids {
		m.Remove(uid)
	}
}
