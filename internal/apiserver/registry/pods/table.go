package pods

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry"
)

// nodeUnreachableReason is the pod status reason the node lifecycle
// controller sets on pods of an unreachable node.
const nodeUnreachableReason = "NodeLost"

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
	{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
	{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
	{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
	{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
	{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
	{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
}

// row computes the cells `kubectl get pods -o wide` shows. The status column
// follows upstream: the phase or reason, overridden by init container
// progress (Init:1/2, Init:CrashLoopBackOff), then by the last container
// with a waiting or terminated reason, then Terminating while deleting.
func row(pod *corev1.Pod, now time.Time) []interface{} {
	var (
		restarts, sidecarRestarts int
		lastRestart, sidecarLast  time.Time
		total                     = len(pod.Spec.Containers)
		ready                     int
	)
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	sidecars := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isSidecar(c) {
			sidecars[c.Name] = true
			total++
		}
	}

	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		restarts += int(cs.RestartCount)
		lastRestart = later(lastRestart, cs.LastTerminationState.Terminated)
		if sidecars[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			sidecarLast = later(sidecarLast, cs.LastTerminationState.Terminated)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				ready++
			}
			continue
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || conditionTrue(pod.Status.Conditions, corev1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, sidecarLast
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			restarts += int(cs.RestartCount)
			lastRestart = later(lastRestart, cs.LastTerminationState.Terminated)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			case cs.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		// A pod whose last container completed while another still runs is
		// shown by its readiness, not as Completed.
		if reason == "Completed" && hasRunning {
			if conditionTrue(pod.Status.Conditions, corev1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeUnreachableReason:
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}

	restartsCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", restarts, registry.Age(metav1.NewTime(lastRestart), now))
	}

	podIP := none(pod.Status.PodIP)
	if len(pod.Status.PodIPs) > 0 {
		podIP = none(pod.Status.PodIPs[0].IP)
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueCount := 0
		for _, g := range pod.Spec.ReadinessGates {
			if conditionTrue(pod.Status.Conditions, g.ConditionType) {
				trueCount++
			}
		}
		gates = fmt.Sprintf("%d/%d", trueCount, len(pod.Spec.ReadinessGates))
	}
	return []interface{}{
		pod.Name,
		fmt.Sprintf("%d/%d", ready, total),
		reason,
		restartsCell,
		registry.Age(pod.CreationTimestamp, now),
		podIP,
		none(pod.Spec.NodeName),
		none(pod.Status.NominatedNodeName),
		gates,
	}
}

// later returns the later of t and the finish time of a termination.
func later(t time.Time, term *corev1.ContainerStateTerminated) time.Time {
	if term != nil && term.FinishedAt.Time.After(t) {
		return term.FinishedAt.Time
	}
	return t
}

// conditionTrue reports whether the first condition of the type is True.
func conditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func none(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
