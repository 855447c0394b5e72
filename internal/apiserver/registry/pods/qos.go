package pods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass computes a pod's quality of service class from its spec, as
// upstream does: BestEffort when no container asks for cpu or memory,
// Guaranteed when every container has equal cpu and memory requests and
// limits, Burstable otherwise. Pod-level resources, when set, decide alone.
// Ephemeral containers do not count: they cannot set resources.
func QOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	if spec.Resources != nil {
		return classOf([]corev1.ResourceRequirements{*spec.Resources})
	}
	var all []corev1.ResourceRequirements
	for _, c := range spec.InitContainers {
		all = append(all, c.Resources)
	}
	for _, c := range spec.Containers {
		all = append(all, c.Resources)
	}
	return classOf(all)
}

func classOf(list []corev1.ResourceRequirements) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	for _, r := range list {
		for name, q := range r.Requests {
			if isCompute(name) && q.Sign() > 0 {
				add(requests, name, q)
			}
		}
		complete := 0
		for name, q := range r.Limits {
			if isCompute(name) && q.Sign() > 0 {
				add(limits, name, q)
				complete++
			}
		}
		if complete < 2 {
			guaranteed = false // a container without both cpu and memory limits
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func isCompute(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := list[name]
	sum.Add(q)
	list[name] = sum
}
