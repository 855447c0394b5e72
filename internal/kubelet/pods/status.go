package pods

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/podconfig"
)

// probeResults are what the probes found (a *prober.Manager); nil means
// every running container is started and ready.
type probeResults interface {
	Started(containerID string) bool
	Ready(containerID string) bool
}

// writeStatus writes pod's status as state shows it to target (pod
// itself, or a static pod's mirror, whose status pod carries), when it
// changed; pod is the allocated pod (allocation.go).
func (w *Workers) writeStatus(ctx context.Context, pod, target *corev1.Pod, state podState) error {
	for attempt := 0; ; attempt++ {
		now := w.now()
		status := podStatus(pod, state, w.waitingOf(pod), w.probes, w.node.HostIPs, now)
		resized, pending, failure := w.resizeSnapshot(string(pod.UID))
		resizeStatus(&status, pod, state, resized, pending, failure, now)
		if apiequality.Semantic.DeepEqual(status, target.Status) {
			return nil
		}
		updated := target.DeepCopy()
		updated.Status = status
		_, err := w.client.CoreV1().Pods(target.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil // deleted meanwhile: the next sync cleans up
		case apierrors.IsConflict(err) && attempt == 0:
			// The informer's copy is behind (often our own last write):
			// start again from the object as the API has it now.
			fresh, getErr := w.client.CoreV1().Pods(target.Namespace).Get(ctx, target.Name, metav1.GetOptions{})
			if getErr != nil || fresh.UID != target.UID {
				return fmt.Errorf("update the status of pod %s/%s: %w", target.Namespace, target.Name, err)
			}
			if pod == target {
				pod = fresh
			} else {
				pod = pod.DeepCopy()
				pod.Status = fresh.Status
			}
			target = fresh
		default:
			return fmt.Errorf("update the status of pod %s/%s: %w", target.Namespace, target.Name, err)
		}
	}
}

// podStatus is the pod's status as the runtime's state shows it; fields
// it does not decide (and timestamps of unchanged conditions) are kept
// from pod.Status. waiting says why containers not yet created wait.
func podStatus(pod *corev1.Pod, state podState, waiting map[string]*corev1.ContainerStateWaiting, probes probeResults, hostIPs []string, now time.Time) corev1.PodStatus {
	old := pod.Status
	s := *old.DeepCopy()
	s.QOSClass = podconfig.QOSClass(pod)
	if s.StartTime == nil {
		t := metav1.NewTime(now.Truncate(time.Second))
		s.StartTime = &t
	}
	s.HostIP, s.HostIPs = "", nil
	for _, ip := range hostIPs {
		s.HostIPs = append(s.HostIPs, corev1.HostIP{IP: ip})
	}
	if len(hostIPs) > 0 {
		s.HostIP = hostIPs[0]
	}
	ips := sandboxIPs(state.sandbox)
	if pod.Spec.HostNetwork && state.sandbox != nil {
		ips = hostIPs
	}
	if len(ips) > 0 {
		s.PodIP, s.PodIPs = ips[0], nil
		for _, ip := range ips {
			s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
		}
	}

	hasInit := len(pod.Spec.InitContainers) > 0
	defaultReason := "ContainerCreating"
	if hasInit {
		defaultReason = "PodInitializing"
	}
	s.InitContainerStatuses = nil
	var unready []string
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(pod, c, state.containers[c.Name], previous(state, c.Name), waiting[c.Name], probes, defaultReason, true)
		if isSidecar(&c) && !cs.Ready {
			unready = append(unready, c.Name) // sidecars count for readiness
		}
		s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
	}
	s.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cs := containerStatus(pod, c, state.containers[c.Name], previous(state, c.Name), waiting[c.Name], probes, defaultReason, false)
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
	}
	// Ephemeral containers (kubectl debug) count for neither phase nor
	// readiness.
	s.EphemeralContainerStatuses = nil
	for i := range pod.Spec.EphemeralContainers {
		c := *podconfig.AsContainer(&pod.Spec.EphemeralContainers[i])
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses,
			containerStatus(pod, c, state.containers[c.Name], previous(state, c.Name), waiting[c.Name], probes, defaultReason, false))
	}
	// A pod being deleted whose containers all stopped is over: its
	// phase is terminal.
	terminal := pod.DeletionTimestamp != nil && !anyRunning(s.InitContainerStatuses) && !anyRunning(s.ContainerStatuses)
	s.Phase = getPhase(pod, s.InitContainerStatuses, s.ContainerStatuses, terminal)
	if old.Phase == corev1.PodSucceeded || old.Phase == corev1.PodFailed {
		s.Phase = old.Phase // a terminal phase is final
	}
	s.Reason, s.Message = "", ""

	conds := []corev1.PodCondition{}
	if c := findCondition(old.Conditions, corev1.PodScheduled); c != nil {
		conds = append(conds, *c)
	} else {
		conds = append(conds, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	}
	sandboxReady := state.sandbox != nil && state.sandbox.State == runtimeapi.PodSandboxState_SANDBOX_READY
	conds = append(conds, boolCondition(corev1.PodReadyToStartContainers, sandboxReady, "", ""))
	conds = append(conds, initializedCondition(pod, s.InitContainerStatuses, s.ContainerStatuses, s.Phase))
	reason, message := "", ""
	switch {
	case s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed:
		reason = "PodCompleted"
	case len(unready) > 0:
		reason, message = "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	ready := len(unready) == 0 && reason == ""
	conds = append(conds, boolCondition(corev1.ContainersReady, ready, reason, message))
	conds = append(conds, boolCondition(corev1.PodReady, ready, reason, message))
	// Keep the other writers' conditions, and the transition times of
	// conditions whose status did not change.
	for _, c := range old.Conditions {
		if findCondition(conds, c.Type) == nil {
			conds = append(conds, c)
		}
	}
	keepTransitionTimes(conds, old.Conditions, now)
	// The conditions the kubelet decides, and the status as a whole,
	// describe the pod's current spec (upstream's observedGeneration).
	for i := range conds {
		switch conds[i].Type {
		case corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady:
			conds[i].ObservedGeneration = pod.Generation
		}
	}
	s.Conditions = conds
	s.ObservedGeneration = pod.Generation
	return s
}

// keepTransitionTimes gives each of conds whose status is the same in old
// its old transition and probe times, and the others now (when unset).
func keepTransitionTimes(conds, old []corev1.PodCondition, now time.Time) {
	for i := range conds {
		c := &conds[i]
		if prev := findCondition(old, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
			c.LastProbeTime = prev.LastProbeTime
		} else if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		}
	}
}

// initializedCondition is upstream's GeneratePodInitializedCondition: an
// init container is initialized once it exited 0, a sidecar once it
// started.
func initializedCondition(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus, phase corev1.PodPhase) corev1.PodCondition {
	if len(pod.Spec.InitContainers) == 0 {
		return boolCondition(corev1.PodInitialized, true, "", "")
	}
	var incomplete []string
	for _, cs := range initStatuses {
		c := specOf(pod, cs.Name)
		started := cs.Started != nil && *cs.Started
		if t := cs.State.Terminated; isSidecar(c) && !started || !isSidecar(c) && (t == nil || t.ExitCode != 0) {
			incomplete = append(incomplete, cs.Name)
		}
	}
	switch {
	case phase == corev1.PodSucceeded:
		return corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, Reason: "PodCompleted"}
	case regularStarted(statuses), len(incomplete) == 0:
		return boolCondition(corev1.PodInitialized, true, "", "")
	}
	return boolCondition(corev1.PodInitialized, false, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))
}

// regularStarted says whether any regular container ran: then the pod
// was initialized (upstream's HasAnyRegularContainerStarted).
func regularStarted(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

func boolCondition(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
	if ok {
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
	}
	return c
}

func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// previous is the container of name before the newest, if any.
func previous(state podState, name string) *runtimeapi.ContainerStatus {
	if h := state.history[name]; len(h) > 1 {
		return h[1]
	}
	return nil
}

// containerStatus is c's status from the runtime's newest container rs
// and the one before it, prev (rs nil: c has no container yet, and waits
// for waiting's reason if known, else defaultReason). An exited container
// that is to be restarted shows as waiting (e.g. CrashLoopBackOff) when
// waiting says why, its exit moved to lastState, as upstream.
func containerStatus(pod *corev1.Pod, c corev1.Container, rs, prev *runtimeapi.ContainerStatus, waiting *corev1.ContainerStateWaiting, probes probeResults, defaultReason string, init bool) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: 0, Started: new(bool)}
	if waiting == nil {
		waiting = &corev1.ContainerStateWaiting{Reason: defaultReason}
	}
	if rs == nil {
		cs.State.Waiting = waiting
		return cs
	}
	cs.RestartCount = int32(rs.GetMetadata().GetAttempt())
	cs.ContainerID = "containerd://" + rs.Id
	cs.ImageID = rs.ImageRef
	if prev != nil && prev.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		cs.LastTerminationState.Terminated = terminatedState(prev)
	}
	switch rs.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: unixTime(rs.StartedAt)}
		*cs.Started = probes == nil || probes.Started(rs.Id)
		// An init container is ready once it completed; a container or
		// a sidecar once its startup and readiness probes passed.
		cs.Ready = (!init || isSidecar(&c)) && *cs.Started && (probes == nil || probes.Ready(rs.Id))
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		term := terminatedState(rs)
		if waiting.Reason != defaultReason && shouldRestart(pod, &c, rs.ExitCode, init) {
			cs.LastTerminationState = corev1.ContainerState{Terminated: term}
			cs.State.Waiting = waiting
		} else {
			cs.State.Terminated = term
			cs.Ready = init && !isSidecar(&c) && rs.ExitCode == 0
		}
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		if waiting.Reason == defaultReason {
			waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		cs.State.Waiting = waiting
	default:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerStatusUnknown", Message: "The container's state is unknown to the runtime"}
	}
	return cs
}

// terminatedState is the terminated state of the exited container rs.
func terminatedState(rs *runtimeapi.ContainerStatus) *corev1.ContainerStateTerminated {
	reason := rs.Reason
	if reason == "" {
		reason = "Error"
		if rs.ExitCode == 0 {
			reason = "Completed"
		}
	}
	return &corev1.ContainerStateTerminated{
		ExitCode: rs.ExitCode, Reason: reason, Message: rs.Message,
		StartedAt: unixTime(rs.StartedAt), FinishedAt: unixTime(rs.FinishedAt), ContainerID: "containerd://" + rs.Id,
	}
}

// unixTime turns CRI nanoseconds into an API time, in whole seconds as
// the API stores it (so an unchanged status compares equal).
func unixTime(ns int64) metav1.Time {
	if ns == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(ns/int64(time.Second), 0))
}

// getPhase is the pod's phase from its containers' statuses, as upstream's
// kubelet computes it: until the pod is initialized, an init container
// not yet completed keeps it Pending (a failed one under restartPolicy
// Never fails it), as does a sidecar not yet started; a running sidecar
// counts as running, an exited one not at all. podIsTerminal says the
// pod's containers will not run again.
func getPhase(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus, podIsTerminal bool) corev1.PodPhase {
	initialized := regularStarted(statuses)
	var pendingInit, pendingSidecars, failedInit int
	var unknown, running, waiting, stopped, succeeded int
	for _, c := range pod.Spec.InitContainers {
		cs := findStatus(initStatuses, c.Name)
		if isSidecar(&c) {
			switch {
			case cs == nil:
				unknown++
			case cs.State.Running != nil:
				if cs.Started == nil || !*cs.Started {
					pendingSidecars++
				}
				running++
			case cs.State.Terminated != nil, cs.LastTerminationState.Terminated != nil:
				// exited sidecars do not count
			default:
				pendingSidecars++
				waiting++
			}
			continue
		}
		if initialized {
			continue
		}
		switch {
		case cs == nil, cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0:
			failedInit++
		default:
			pendingInit++
		}
	}
	for _, c := range pod.Spec.Containers {
		cs := findStatus(statuses, c.Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 || pendingSidecars > 0 && !initialized, waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning // it restarts (in time)
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning // OnFailure restarts the failed
	default:
		return corev1.PodPending
	}
}

// findStatus is the status of the container called name, or nil.
func findStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func anyRunning(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil {
			return true
		}
	}
	return false
}
