package staticpods

import (
	corev1 "k8s.io/api/core/v1"

	"orch/internal/poddefaults"
)

// apiDefaults applies the API's defaulting of a Pod (internal/poddefaults,
// which the apiserver uses too), so a static pod looks to the pod workers
// as it would had it been created through the API; a test checks it
// against the real apiserver.
func apiDefaults(pod *corev1.Pod) {
	poddefaults.PodSpec(&pod.Spec)
	poddefaults.PodOnly(&pod.Spec)
}
