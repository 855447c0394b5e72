package controller

import corev1 "k8s.io/api/core/v1"

// PodReady is true when the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
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
