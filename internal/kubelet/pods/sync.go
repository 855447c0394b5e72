package pods

import (
	"context"
	"errors"
	"orch/internal/kubelet/cri"
	"orch/internal/kubelet/podconfig"
	"orch/internal/kubelet/prober"
	"orch/internal/kubelet/staticpods"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

var everything = labels.Everything()

// minGracePeriod is upstream's minimumGracePeriodInSeconds: a container
// always gets this long to stop.
const minGracePeriod = 2

// podState is what the runtime has of one pod.
type podState struct {
	sandbox    *runtimeapi.PodSandboxStatus           // the newest sandbox; nil when none
	containers map[string]*runtimeapi.ContainerStatus // by container name, newest
	// history holds every container of each name, newest first: the
	// one before the newest gives the lastState of a restarted one.
	history map[string][]*runtimeapi.ContainerStatus
	// active holds the newest container of each name in the newest
	// sandbox: what decides the pod's initialization (a new sandbox
	// runs its init containers again, as upstream's).
	active map[string]*runtimeapi.ContainerStatus
	// sandboxOf is the sandbox of each container, by container ID.
	sandboxOf map[string]string
	// emptyOld are the pod's sandboxes before the newest that hold no
	// container any more: they can go.
	emptyOld []string
}

// sync makes the runtime match the pod of key and writes the pod's status.
func (w *Workers) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := w.lister.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if static, ok := w.staticPod(ns, name); ok {
		return w.syncStatic(ctx, key, static, pod)
	}
	if pod == nil || staticpods.IsMirror(pod) {
		// Gone, or the mirror of a static pod whose file is gone (the
		// full resync deletes such mirrors): nothing of it may run.
		return w.killStale(ctx, ns, name, "")
	}
	return w.syncPod(ctx, key, pod, pod)
}

// staticPod is the static pod of namespace/name, if there is one.
func (w *Workers) staticPod(namespace, name string) (*corev1.Pod, bool) {
	if w.static == nil {
		return nil, false
	}
	return w.static.Get(namespace, name)
}

// syncStatic runs a static pod from its file and keeps its mirror pod in
// the API, which gets the status (apiPod is what the API has under the
// static pod's key, if anything).
func (w *Workers) syncStatic(ctx context.Context, key string, static, apiPod *corev1.Pod) error {
	var mirror *corev1.Pod
	if apiPod != nil && staticpods.IsMirror(apiPod) {
		mirror = apiPod
	}
	if err := w.mirrors.Sync(ctx, static, mirror); err != nil {
		w.log.Info("mirror pod", "pod", key, "err", err) // the static pod runs all the same
	}
	var target *corev1.Pod
	if mirror != nil && mirror.DeletionTimestamp == nil && mirror.Annotations[staticpods.AnnotationMirror] == string(static.UID) {
		target = mirror
		static.Status = *mirror.Status.DeepCopy()
	}
	return w.syncPod(ctx, key, static, target)
}

// syncPod makes the runtime match pod and writes its status to target
// (pod itself, or a static pod's mirror; nil: none yet).
func (w *Workers) syncPod(ctx context.Context, key string, pod, target *corev1.Pod) error {
	// Sandboxes of an earlier pod of the same name go first.
	if err := w.killStale(ctx, pod.Namespace, pod.Name, string(pod.UID)); err != nil {
		return err
	}
	w.keys.Store(string(pod.UID), key)
	if end, ok := ending(pod); ok {
		// Being deleted, or finished: no need to read the runtime first.
		_, err := (&execution{w: w, pod: pod}).do(ctx, []action{end})
		return err
	}
	if target != nil {
		if evicted, err := w.evictOverSizeLimit(ctx, pod, target); evicted || err != nil {
			return err
		}
		if failed, err := w.failPastDeadline(ctx, pod, target); failed || err != nil {
			return err
		}
	}
	// The containers run with the resources the workers allocated, which
	// a resize waiting for room has not changed yet (allocation.go). A
	// new pod the node has no room for is refused.
	pod, rejected, err := w.admit(ctx, pod, target)
	if rejected || err != nil {
		return err
	}
	syncErr := w.run(ctx, pod)
	state, err := w.state(ctx, string(pod.UID))
	if err != nil {
		return errors.Join(syncErr, err)
	}
	w.probes.Sync(pod, w.probeIP(pod, state), runningContainers(state))
	if target == nil {
		return syncErr
	}
	return errors.Join(syncErr, w.writeStatus(ctx, pod, target, state))
}

// probeIP is the address probes of pod reach: its IP, or the node's for
// a pod on the host's network.
func (w *Workers) probeIP(pod *corev1.Pod, state podState) string {
	ips := sandboxIPs(state.sandbox)
	if pod.Spec.HostNetwork && len(w.node.HostIPs) > 0 {
		ips = w.node.HostIPs
	}
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

// runningContainers are the running containers of state, by name.
func runningContainers(state podState) map[string]prober.Running {
	out := map[string]prober.Running{}
	for name, c := range state.containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out[name] = prober.Running{ID: c.Id, StartedAt: time.Unix(0, c.StartedAt)}
		}
	}
	return out
}

// podReader reads what the runtime has of the pods.
type podReader interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

var (
	_ podReader = (*cri.Runtime)(nil)
	_ podReader = (*cri.Fake)(nil)
)

// state reads the runtime's sandboxes and containers of the pod with uid:
// the newest sandbox, and the containers of all its sandboxes, so that a
// pod whose sandbox was replaced keeps its containers' restart counts and
// last states, as upstream's.
func (w *Workers) state(ctx context.Context, uid string) (podState, error) {
	var st podState
	sandboxes, err := w.reader.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podconfig.LabelPodUID: uid}})
	if err != nil {
		return st, err
	}
	if len(sandboxes) == 0 {
		return st, nil
	}
	newest := sandboxes[0]
	for _, sb := range sandboxes[1:] {
		a, b := sb.GetMetadata().GetAttempt(), newest.GetMetadata().GetAttempt()
		if a > b || a == b && sb.CreatedAt > newest.CreatedAt {
			newest = sb
		}
	}
	sbStatus, err := w.reader.PodSandboxStatus(ctx, newest.Id, false)
	if err != nil {
		return st, err
	}
	st.sandbox = sbStatus.GetStatus()
	containers, err := w.reader.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{podconfig.LabelPodUID: uid}})
	if err != nil {
		return st, err
	}
	used := map[string]bool{}
	for _, c := range containers {
		used[c.PodSandboxId] = true
	}
	for _, sb := range sandboxes {
		if sb.Id != newest.Id && !used[sb.Id] {
			st.emptyOld = append(st.emptyOld, sb.Id)
		}
	}
	sort.SliceStable(containers, func(i, j int) bool {
		ai, aj := containers[i].GetMetadata().GetAttempt(), containers[j].GetMetadata().GetAttempt()
		if ai != aj {
			return ai < aj
		}
		return containers[i].CreatedAt < containers[j].CreatedAt
	})
	st.containers = map[string]*runtimeapi.ContainerStatus{}
	st.history = map[string][]*runtimeapi.ContainerStatus{}
	st.active = map[string]*runtimeapi.ContainerStatus{}
	st.sandboxOf = map[string]string{}
	for i := len(containers) - 1; i >= 0; i-- { // newest first
		c := containers[i]
		res, err := w.reader.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			return st, err
		}
		cs := res.GetStatus()
		if cs.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			if msg := terminationMessage(cs); msg != "" {
				cs.Message = strings.TrimPrefix(cs.Message+": "+msg, ": ")
			}
		}
		name := c.GetMetadata().GetName()
		if st.containers[name] == nil {
			st.containers[name] = cs
		}
		st.sandboxOf[c.Id] = c.PodSandboxId
		if st.active[name] == nil && c.PodSandboxId == newest.Id {
			st.active[name] = cs
		}
		st.history[name] = append(st.history[name], cs)
	}
	return st, nil
}

func (w *Workers) setWaiting(pod *corev1.Pod, container, reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	uid := string(pod.UID)
	if reason == "" {
		delete(w.waiting[uid], container)
		return
	}
	if w.waiting[uid] == nil {
		w.waiting[uid] = map[string]*corev1.ContainerStateWaiting{}
	}
	w.waiting[uid][container] = &corev1.ContainerStateWaiting{Reason: reason, Message: message}
}

func (w *Workers) waitingOf(pod *corev1.Pod) map[string]*corev1.ContainerStateWaiting {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]*corev1.ContainerStateWaiting{}
	for k, v := range w.waiting[string(pod.UID)] {
		out[k] = v.DeepCopy()
	}
	return out
}

// sandboxIPs are the sandbox's IPs, the primary first.
func sandboxIPs(sb *runtimeapi.PodSandboxStatus) []string {
	n := sb.GetNetwork()
	if n.GetIp() == "" {
		return nil
	}
	ips := []string{n.Ip}
	for _, ip := range n.GetAdditionalIps() {
		ips = append(ips, ip.GetIp())
	}
	return ips
}

func key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
