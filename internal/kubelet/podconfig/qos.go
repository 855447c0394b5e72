package podconfig

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OOM score adjustments of upstream's kubelet (pkg/kubelet/qos).
const (
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
)

// Annotations and priorities that make a pod node-critical.
const (
	configSourceAnnotation = "kubernetes.io/config.source"
	configMirrorAnnotation = "kubernetes.io/config.mirror"
	systemCriticalPriority = 2000000000
	systemNodeCritical     = "system-node-critical"
)

// QOSClass is the pod's quality of service class: Status.QOSClass when it
// is set, otherwise computed from the requests and limits of cpu and
// memory (the pod-level ones when the pod has any).
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputeQOSClass(pod)
}

// ComputeQOSClass computes the QoS class from the spec alone: BestEffort
// when no container asks for cpu or memory, Guaranteed when every
// container has equal, non-zero requests and limits for both, Burstable
// otherwise.
func ComputeQOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if podLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var class corev1.PodQOSClass
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range all {
		c := requirementsQOS(&all[i].Resources)
		switch {
		case c == corev1.PodQOSBurstable:
			return c
		case class == "":
			class = c
		case class != c:
			return corev1.PodQOSBurstable
		}
	}
	if class == "" {
		return corev1.PodQOSBestEffort
	}
	return class
}

// podLevelResourcesSet is true when pod.spec.resources asks for cpu or
// memory (PodLevelResources is on by default in 1.37).
func podLevelResourcesSet(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := r.Requests[name]; ok {
			return true
		}
		if _, ok := r.Limits[name]; ok {
			return true
		}
	}
	return false
}

func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var class corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		c := corev1.PodQOSGuaranteed
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			c = corev1.PodQOSBestEffort
		}
		if class != "" && class != c {
			return corev1.PodQOSBurstable
		}
		class = c
	}
	return class
}

// IsNodeCritical is true for a critical pod (static, mirror, or of
// system-critical priority) in priority class system-node-critical.
func IsNodeCritical(pod *corev1.Pod) bool {
	if pod.Spec.PriorityClassName != systemNodeCritical {
		return false
	}
	if src, ok := pod.Annotations[configSourceAnnotation]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations[configMirrorAnnotation]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// OOMScoreAdj is the oom_score_adj of a container: -997 for Guaranteed and
// node-critical pods, 1000 for BestEffort, and for Burstable
// 1000 - 1000*memoryRequest/memoryCapacity kept within [3, 999] (so
// Burstable stays above Guaranteed and below BestEffort). A sidecar (an
// init container with restartPolicy Always) gets no more than the regular
// container with the smallest memory request. With pod-level memory
// requests, what the containers do not claim is shared equally among the
// regular containers.
func OOMScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int64 {
	if IsNodeCritical(pod) {
		return GuaranteedOOMScoreAdj
	}
	switch QOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return BestEffortOOMScoreAdj - 1
	}
	extra := unclaimedPodMemoryPerContainer(pod)
	adj := 1000 - 1000*(c.Resources.Requests.Memory().Value()+extra)/memoryCapacity
	if isSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for _, rc := range pod.Spec.Containers[1:] {
			least = min(least, rc.Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-1000*(least+extra)/memoryCapacity)
	}
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj == BestEffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}

// unclaimedPodMemoryPerContainer is what the pod-level memory request
// leaves over after the containers' aggregate request, split equally
// among all containers, init containers included (0 without a pod-level
// memory request).
func unclaimedPodMemoryPerContainer(pod *corev1.Pod) int64 {
	if pod.Spec.Resources == nil || pod.Spec.Resources.Requests.Memory().IsZero() {
		return 0
	}
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	left := pod.Spec.Resources.Requests.Memory().Value() - aggregate(pod, corev1.ResourceMemory, requestsOf)
	if n == 0 || left <= 0 {
		return 0
	}
	return left / n
}

func requestsOf(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }
func limitsOf(c *corev1.Container) corev1.ResourceList   { return c.Resources.Limits }

// aggregate is what the containers of a pod need of one resource at the
// most at any time (in milli-units for cpu, units otherwise): the regular
// containers and sidecars together, or an init container together with
// the sidecars started before it, whichever is more.
func aggregate(pod *corev1.Pod, name corev1.ResourceName, of func(*corev1.Container) corev1.ResourceList) int64 {
	value := func(c *corev1.Container) int64 {
		q := of(c)[name]
		if name == corev1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	var running, sidecars, initPeak int64
	for i := range pod.Spec.Containers {
		running += value(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		v := value(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			running += v
			sidecars += v
			v = sidecars
		} else {
			v += sidecars
		}
		initPeak = max(initPeak, v)
	}
	return max(running, initPeak)
}

func isSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		return false
	}
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name == c.Name {
			return true
		}
	}
	return false
}

// PodCgroupName is the cgroup parent of the pod's sandbox and containers
// under the kubelet's pod cgroup hierarchy: for the cgroupfs driver
// /kubepods/pod<uid>, /kubepods/burstable/pod<uid> or
// /kubepods/besteffort/pod<uid>; for the systemd driver the slice name,
// e.g. kubepods-burstable-pod<uid with _ for ->.slice.
func PodCgroupName(pod *corev1.Pod, qos corev1.PodQOSClass, systemd bool) string {
	parts := []string{"kubepods"}
	switch qos {
	case corev1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case corev1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	}
	parts = append(parts, "pod"+string(pod.UID))
	if !systemd {
		return "/" + path.Join(parts...)
	}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "-", "_")
	}
	return strings.Join(parts, "-") + ".slice"
}
