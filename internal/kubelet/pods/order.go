package pods

import (
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// shouldRestart says whether c, exited with exitCode, is run again under
// the pod's restartPolicy. A completed (exit 0) init container never is; a
// sidecar (restartable init container) always is.
func shouldRestart(pod *corev1.Pod, c *corev1.Container, exitCode int32, init bool) bool {
	if init && isSidecar(c) {
		return true
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default: // Always (the default)
		return !init || exitCode != 0
	}
}

// initContainersToRun are the init containers of pod that containerActions
// is to start, restart or check now, and whether pod is initialized (its
// regular containers may run), as upstream's computeInitContainerActions:
// init containers run one at a time, in order, each to completion (exit
// 0), except sidecars (restartPolicy Always), which keep running: the next
// one starts once a sidecar started (its startup probe passed). Once a
// regular container was created the pod stays initialized, and only its
// sidecars are kept running. A failed init container that is not to be
// restarted (restartPolicy Never) leaves the pod uninitialized for good.
func initContainersToRun(pod *corev1.Pod, state podState, probes probeView) (run []*corev1.Container, initialized bool) {
	initialized = regularContainerCreated(pod, state)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		rs := state.active[c.Name]
		if isSidecar(c) {
			run = append(run, c)
			started := rs != nil && rs.State == runtimeapi.ContainerState_CONTAINER_RUNNING && (probes == nil || probes.Started(rs.Id))
			if !initialized && !started {
				return run, false
			}
			continue
		}
		if initialized {
			continue
		}
		exited := rs != nil && rs.State == runtimeapi.ContainerState_CONTAINER_EXITED
		switch {
		case exited && rs.ExitCode == 0:
			continue
		case exited && !shouldRestart(pod, c, rs.ExitCode, true):
			return run, false
		}
		return append(run, c), false
	}
	return run, true
}

// regularContainerCreated says whether any regular container of pod was
// created in its newest sandbox (upstream's
// HasAnyActiveRegularContainerStarted): the pod was then initialized.
func regularContainerCreated(pod *corev1.Pod, state podState) bool {
	for _, c := range pod.Spec.Containers {
		if state.active[c.Name] != nil {
			return true
		}
	}
	return false
}

// regularContainersDone says whether every regular container of pod
// exited and is not to run again.
func regularContainersDone(pod *corev1.Pod, state podState) bool {
	for i := range pod.Spec.Containers {
		rs := state.containers[pod.Spec.Containers[i].Name]
		if rs == nil || rs.State != runtimeapi.ContainerState_CONTAINER_EXITED || shouldRestart(pod, &pod.Spec.Containers[i], rs.ExitCode, false) {
			return false
		}
	}
	return len(pod.Spec.Containers) > 0
}

// isSidecar says whether c is a restartable init container (a sidecar).
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
