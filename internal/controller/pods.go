package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodReady is true when the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeReady is true when the node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TargetPort resolves a service port's targetPort for pod: a number as it
// is (the service port when unset), a name through the pod's container ports
// of the same protocol. ok is false for a name the pod does not have (or
// when pod is nil).
func TargetPort(sp corev1.ServicePort, pod *corev1.Pod) (int32, bool) {
	if sp.TargetPort.StrVal == "" {
		if sp.TargetPort.IntVal != 0 {
			return sp.TargetPort.IntVal, true
		}
		return sp.Port, true
	}
	if pod == nil {
		return 0, false
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == sp.TargetPort.StrVal && p.Protocol == sp.Protocol {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// ReadyCondition returns the pod's Ready condition, or nil when it has none.
func ReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// PodAvailable is true when the pod has been ready for at least
// minReadySeconds at now (at once when minReadySeconds is 0).
func PodAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := ReadyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// NextAvailabilityCheck is how long after now the first of pods that was
// ready but not yet available when status was computed (at evaluated)
// becomes available; 0 if that moment has passed, false if there is none.
func NextAvailabilityCheck(pods []*corev1.Pod, minReadySeconds int32, evaluated, now time.Time) (time.Duration, bool) {
	var first time.Time
	for _, p := range pods {
		c := ReadyCondition(p)
		if c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
			continue
		}
		at := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
		if at.After(evaluated) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return max(first.Sub(now), 0), true
}
