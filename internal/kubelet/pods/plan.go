package pods

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/podconfig"
)

// A pod's sync is a plan and its execution, as upstream's
// computePodActions and SyncPod: plan compares the pod with what the
// runtime has of it (podState) and what the kubelet knows (probe results,
// restart back-offs, the time) and returns the actions that bring the
// runtime toward the pod; the executor (execute.go) performs them. The plan
// calls nothing and changes nothing.

// actionKind says what an action does.
type actionKind int

const (
	// killPod stops a pod being deleted (within grace) and deletes it.
	killPod actionKind = iota + 1
	// stopPod stops the sandbox of a pod that finished; it keeps its status.
	stopPod
	// removeSandbox removes an old sandbox (id) that holds no container.
	removeSandbox
	// removeContainer removes an exited container (id) no status needs.
	removeContainer
	// killSandbox stops what is left of a sandbox (id) that died.
	killSandbox
	// createSandbox runs a new sandbox (attempt); the containers are
	// planned once it is ready.
	createSandbox
	// prepareSandbox sets up what the containers of the ready sandbox
	// share: its config, log directories and /etc/hosts.
	prepareSandbox
	// stopSidecar stops a running sidecar (id) once the regular
	// containers are done.
	stopSidecar
	// createContainer creates attempt of a container and starts it.
	createContainer
	// startContainer starts a container (id) created before whose start
	// failed.
	startContainer
	// waitBackOff keeps an exited container (id) waiting in
	// CrashLoopBackOff until its restart back-off ends.
	waitBackOff
	// killContainer stops a running container (id) that is to restart.
	killContainer
	// resizeContainer updates the resources of a running container (id)
	// to its allocation, in place.
	resizeContainer
	// rejectContainer reports a container that cannot be created.
	rejectContainer
)

var kindNames = map[actionKind]string{
	killPod: "killPod", stopPod: "stopPod", removeSandbox: "removeSandbox", removeContainer: "removeContainer",
	killSandbox: "killSandbox", createSandbox: "createSandbox", prepareSandbox: "prepareSandbox", stopSidecar: "stopSidecar",
	createContainer: "createContainer", startContainer: "startContainer", waitBackOff: "waitBackOff",
	killContainer: "killContainer", resizeContainer: "resizeContainer", rejectContainer: "rejectContainer",
}

func (k actionKind) String() string { return kindNames[k] }

// role is the kind of container an action is about, as errors name it.
type role string

const (
	initRole      role = "init container"
	regularRole   role = "container"
	ephemeralRole role = "ephemeral container"
)

// action is one step of a pod's sync.
type action struct {
	kind actionKind
	// container and role name the container of a container action.
	container *corev1.Container
	role      role
	// id is the sandbox or container acted on.
	id string
	// attempt is the attempt createSandbox or createContainer makes.
	attempt uint32
	// remove are the older attempts createContainer removes.
	remove []string
	// target is the container whose process namespace an ephemeral
	// container joins.
	target string
	// restart, for createContainer, raises the container's restart
	// back-off from its exit at finished.
	restart  bool
	finished time.Time
	// grace bounds killPod and killContainer, in seconds.
	grace int64
	// reason says why a container is killed or rejected.
	reason string
	// delay is waitBackOff's back-off, which ends at until.
	delay time.Duration
	until time.Time
}

// String is a short form of a for logs and tests, e.g.
// "createContainer main attempt=1 remove=[c1] restart".
func (a action) String() string {
	parts := []string{a.kind.String()}
	if a.container != nil {
		parts = append(parts, a.container.Name)
	}
	if a.id != "" {
		parts = append(parts, "id="+a.id)
	}
	if a.attempt > 0 {
		parts = append(parts, fmt.Sprintf("attempt=%d", a.attempt))
	}
	if len(a.remove) > 0 {
		parts = append(parts, fmt.Sprintf("remove=%v", a.remove))
	}
	if a.target != "" {
		parts = append(parts, "target="+a.target)
	}
	if a.restart {
		parts = append(parts, "restart")
	}
	if a.kind == killPod || a.kind == killContainer {
		parts = append(parts, fmt.Sprintf("grace=%d", a.grace))
	}
	if a.reason != "" {
		parts = append(parts, strconv.Quote(a.reason))
	}
	if a.kind == waitBackOff {
		parts = append(parts, fmt.Sprintf("delay=%s until=%s", a.delay, a.until.Format(time.TimeOnly)))
	}
	return strings.Join(parts, " ")
}

// probeView is what the probes found of the containers (a
// *prober.Manager); nil means every container started and is alive.
type probeView interface {
	Started(containerID string) bool
	LivenessFailed(containerID string) bool
	StartupFailed(containerID string) bool
	LivenessGracePeriod(containerID string) *int64
}

// backOffView is the containers' restart back-offs (a
// *flowcontrol.Backoff keyed by restartKey).
type backOffView interface {
	IsInBackOffSince(id string, eventTime time.Time) bool
	Get(id string) time.Duration
}

// knowledge is what the kubelet knows of a pod besides its spec and the
// runtime's state.
type knowledge struct {
	now     time.Time
	probes  probeView
	backOff backOffView
	// updated are the cpu and memory resources of the pod's containers
	// updated in place, by container ID (resize.go).
	updated map[string]corev1.ResourceRequirements
}

// plan returns the actions that bring the runtime's state of pod toward
// its spec.
func plan(pod *corev1.Pod, state podState, k knowledge) []action {
	if end, ok := ending(pod); ok {
		return []action{end}
	}
	var acts []action
	for _, id := range state.emptyOld {
		acts = append(acts, action{kind: removeSandbox, id: id})
	}
	acts = append(acts, deadContainers(state)...)
	switch sb := state.sandbox; {
	case sb == nil:
		return append(acts, action{kind: createSandbox})
	case sb.State != runtimeapi.PodSandboxState_SANDBOX_READY:
		// The sandbox died (its pause process, or a reboot): what is left
		// of the pod is killed and a new sandbox made, unless the pod's
		// containers ran already and are not to be restarted.
		acts = append(acts, action{kind: killSandbox, id: sb.Id})
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever && len(state.containers) > 0 || regularContainersDone(pod, state) {
			return acts
		}
		return append(acts, action{kind: createSandbox, attempt: sb.GetMetadata().GetAttempt() + 1})
	}
	acts = append(acts, action{kind: prepareSandbox})
	if regularContainersDone(pod, state) {
		// Every regular container exited for good: the sidecars stop too,
		// and the pod completes.
		return append(acts, sidecarsToStop(pod, state)...)
	}
	initToRun, initialized := initContainersToRun(pod, state, k.probes)
	for _, c := range initToRun {
		acts = append(acts, containerActions(pod, c, initRole, state, k)...)
	}
	if !initialized {
		return acts
	}
	for i := range pod.Spec.Containers {
		acts = append(acts, containerActions(pod, &pod.Spec.Containers[i], regularRole, state, k)...)
	}
	for i := range pod.Spec.EphemeralContainers {
		acts = append(acts, ephemeralActions(&pod.Spec.EphemeralContainers[i], state)...)
	}
	return acts
}

// ending is the action that ends pod, if it is being deleted or finished.
func ending(pod *corev1.Pod) (action, bool) {
	switch {
	case pod.DeletionTimestamp != nil:
		grace := gracePeriod(pod)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = *pod.DeletionGracePeriodSeconds
		}
		return action{kind: killPod, grace: grace}, true
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return action{kind: stopPod}, true
	}
	return action{}, false
}

// deadContainers removes the exited containers no status needs, as
// upstream's container GC keeps one per container: of each name the
// newest stays, and the one before it for lastState and logs --previous
// while the newest runs, or when both ran in the same sandbox (a crash
// loop); an init container run again in a new sandbox lets go of its run
// in the old one.
func deadContainers(state podState) []action {
	var acts []action
	for _, name := range slices.Sorted(maps.Keys(state.history)) {
		hist := state.history[name]
		newest := hist[0]
		for i, cs := range hist[1:] {
			if cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
				continue
			}
			if i == 0 && (newest.State != runtimeapi.ContainerState_CONTAINER_EXITED || state.sandboxOf[newest.Id] == state.sandboxOf[cs.Id]) {
				continue
			}
			acts = append(acts, action{kind: removeContainer, id: cs.Id, reason: name})
		}
	}
	return acts
}

// containerActions are the actions of c (an init or regular container):
// it is created unless it exists; an exited one is created again, as the
// next attempt, when the pod's restartPolicy says so and its back-off has
// passed (the attempts before the exited one are then removed: it stays
// for lastState and logs --previous); a running one is killed when a
// probe failed or its spec changed, and resized (resize.go) when its
// resources differ from its allocation (pod is the allocated pod).
func containerActions(pod *corev1.Pod, c *corev1.Container, r role, state podState, k knowledge) []action {
	hist := state.history[c.Name]
	if len(hist) == 0 {
		return []action{{kind: createContainer, container: c, role: r}}
	}
	cs, init := hist[0], r == initRole
	switch {
	case state.active[c.Name] == nil:
		// Its last attempt ran in an earlier sandbox: it runs again in
		// this one (an init container whatever its exit code).
		if !init && !shouldRestart(pod, c, cs.ExitCode, false) {
			return nil
		}
		return []action{restartAction(pod, c, r, cs, nil, k)}
	case cs.State == runtimeapi.ContainerState_CONTAINER_CREATED:
		return []action{{kind: startContainer, container: c, role: r, id: cs.Id}}
	case cs.State == runtimeapi.ContainerState_CONTAINER_EXITED:
		if !shouldRestart(pod, c, cs.ExitCode, init) {
			return nil
		}
		return []action{restartAction(pod, c, r, cs, containerIDs(hist[1:]), k)}
	case cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		if acts := runningActions(pod, c, r, cs, hist, k.probes); len(acts) > 0 {
			return acts
		}
		if init && !isSidecar(c) {
			return nil
		}
		return resizeActions(pod, c, r, cs, hist, k.updated)
	}
	return nil
}

// restartAction creates the next attempt of c, whose newest container cs
// exited, or waits while its back-off lasts (upstream's doBackOff).
func restartAction(pod *corev1.Pod, c *corev1.Container, r role, cs *runtimeapi.ContainerStatus, remove []string, k knowledge) action {
	key, finished := restartKey(pod, c), time.Unix(0, cs.FinishedAt)
	if k.backOff != nil && k.backOff.IsInBackOffSince(key, finished) {
		delay := k.backOff.Get(key)
		return action{kind: waitBackOff, container: c, role: r, id: cs.Id, delay: delay, until: finished.Add(delay)}
	}
	return action{kind: createContainer, container: c, role: r, attempt: cs.GetMetadata().GetAttempt() + 1,
		remove: remove, restart: true, finished: finished}
}

// runningActions kill running container cs of c when its liveness or
// startup probe failed (it then restarts as the pod's restartPolicy says),
// or replace it when its spec changed (whatever the restartPolicy), as
// upstream's computePodActions.
func runningActions(pod *corev1.Pod, c *corev1.Container, r role, cs *runtimeapi.ContainerStatus, hist []*runtimeapi.ContainerStatus, probes probeView) []action {
	if probes != nil && probes.LivenessFailed(cs.Id) {
		probe := "liveness"
		if probes.StartupFailed(cs.Id) {
			probe = "startup"
		}
		grace := gracePeriod(pod)
		if g := probes.LivenessGracePeriod(cs.Id); g != nil {
			grace = *g
		}
		return []action{{kind: killContainer, container: c, role: r, id: cs.Id, grace: grace, reason: "failed " + probe + " probe"}}
	}
	if (r == initRole && !isSidecar(c)) || !specChanged(c, cs) {
		return nil
	}
	return []action{
		{kind: killContainer, container: c, role: r, id: cs.Id, grace: gracePeriod(pod), reason: "definition changed"},
		{kind: createContainer, container: c, role: r, attempt: cs.GetMetadata().GetAttempt() + 1, remove: containerIDs(hist[1:])},
	}
}

// specChanged says whether container cs was made from another spec than
// c (upstream's container hash; a container without one is left alone).
func specChanged(c *corev1.Container, cs *runtimeapi.ContainerStatus) bool {
	h, ok := cs.GetAnnotations()[podconfig.AnnotationHash]
	return ok && h != strconv.FormatUint(podconfig.ContainerHash(c), 16)
}

// ephemeralActions start ephemeral container ec (kubectl debug) once, as
// upstream: it is never restarted, and it may share the process
// namespace of its target container.
func ephemeralActions(ec *corev1.EphemeralContainer, state podState) []action {
	c := podconfig.AsContainer(ec)
	if cs := state.active[c.Name]; cs != nil {
		if cs.State == runtimeapi.ContainerState_CONTAINER_CREATED {
			return []action{{kind: startContainer, container: c, role: ephemeralRole, id: cs.Id}}
		}
		return nil
	}
	target := ""
	if ec.TargetContainerName != "" {
		t := state.active[ec.TargetContainerName]
		if t == nil {
			return []action{{kind: rejectContainer, container: c, role: ephemeralRole,
				reason: "unable to find target container " + ec.TargetContainerName}}
		}
		target = t.Id
	}
	return []action{{kind: createContainer, container: c, role: ephemeralRole, target: target}}
}

// sidecarsToStop stop pod's running sidecars, one by one in reverse order.
func sidecarsToStop(pod *corev1.Pod, state podState) []action {
	var acts []action
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		if rs := state.active[c.Name]; isSidecar(c) && rs != nil && rs.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			acts = append(acts, action{kind: stopSidecar, container: c, role: initRole, id: rs.Id})
		}
	}
	return acts
}

func containerIDs(list []*runtimeapi.ContainerStatus) []string {
	var ids []string
	for _, cs := range list {
		ids = append(ids, cs.Id)
	}
	return ids
}
