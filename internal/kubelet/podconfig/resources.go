package podconfig

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CPU share and CFS quota bounds of upstream's kubelet (pkg/kubelet/cm).
const (
	MinShares      = 2
	MaxShares      = 262144
	QuotaPeriod    = 100000 // cfs_period_us
	MinQuotaPeriod = 1000   // the smallest cfs_quota_us
)

// CPUShares converts milli-CPUs (a request) to cgroup cpu.shares: 1024 per
// CPU, at least 2 (also for no request) and at most 262144.
func CPUShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return MinShares
	}
	return min(max(milliCPU*1024/1000, MinShares), MaxShares)
}

// CPUQuota converts milli-CPUs (a limit) to a CFS quota over period
// microseconds: 0 (no quota) for no limit, at least 1000.
func CPUQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/1000, MinQuotaPeriod)
}

// linuxResources is upstream's calculation of cpu shares, quota and
// period and the memory limit; a nil cpuRequest takes the limit's shares.
func linuxResources(cpuRequest, cpuLimit *resource.Quantity, memoryLimit int64, node Node) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	if cpuRequest == nil {
		cpuRequest = cpuLimit
	}
	r.CpuShares = CPUShares(cpuRequest.MilliValue())
	if memoryLimit != 0 {
		r.MemoryLimitInBytes = memoryLimit
	}
	r.CpuPeriod = QuotaPeriod
	r.CpuQuota = CPUQuota(cpuLimit.MilliValue(), QuotaPeriod)
	if node.CgroupV2 && !node.SingleProcessOOMKill {
		r.Unified = map[string]string{"memory.oom.group": "1"}
	}
	return r
}

// ContainerResources are the cgroup settings of a container: cpu shares
// from its cpu request (or limit), CFS quota from its cpu limit, its
// memory limit (the pod-level limits stand in for missing container
// limits), oom_score_adj by QoS class, and on cgroup v2 memory.oom.group,
// memory.high=max and, with a swap controller, memory.swap.max=0 (the
// kubelet's default NoSwap). Hugepages, DRA, exclusive CPUs and MemoryQoS
// are not supported.
func ContainerResources(pod *corev1.Pod, c *corev1.Container, node Node) *runtimeapi.LinuxContainerResources {
	var cpuRequest *resource.Quantity
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		cpuRequest = c.Resources.Requests.Cpu()
	}
	cpuLimit, memLimit := c.Resources.Limits.Cpu(), c.Resources.Limits.Memory()
	if podLevelResourcesSet(pod) {
		if cpuLimit.IsZero() {
			cpuLimit = pod.Spec.Resources.Limits.Cpu()
		}
		if memLimit.IsZero() {
			memLimit = pod.Spec.Resources.Limits.Memory()
		}
	}
	r := linuxResources(cpuRequest, cpuLimit, memLimit.Value(), node)
	r.OomScoreAdj = OOMScoreAdj(pod, c, node.MemoryCapacity)
	if node.CgroupV2 {
		if r.Unified == nil {
			r.Unified = map[string]string{}
		}
		if node.SwapController {
			r.Unified["memory.swap.max"] = "0"
		}
		r.Unified["memory.high"] = "max"
	} else if node.SwapController {
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
	}
	return r
}

// SandboxResources are the pod's aggregate resources (without overhead)
// as the sandbox's Linux resources, and the overhead as its own
// (requests equal to limits).
func SandboxResources(pod *corev1.Pod, node Node) (resources, overhead *runtimeapi.LinuxContainerResources) {
	total := func(name corev1.ResourceName, of func(*corev1.Container) corev1.ResourceList, podLevel corev1.ResourceList) (resource.Quantity, bool) {
		if podLevelResourcesSet(pod) {
			if q, ok := podLevel[name]; ok {
				return q, true
			}
		}
		has := false
		for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range cs {
				if _, ok := of(&cs[i])[name]; ok {
					has = true
				}
			}
		}
		v := aggregate(pod, name, of)
		if name == corev1.ResourceCPU {
			return *resource.NewMilliQuantity(v, resource.DecimalSI), has
		}
		return *resource.NewQuantity(v, resource.BinarySI), has
	}
	var podReq, podLim corev1.ResourceList
	if pod.Spec.Resources != nil {
		podReq, podLim = pod.Spec.Resources.Requests, pod.Spec.Resources.Limits
	}
	cpuReq, hasCPUReq := total(corev1.ResourceCPU, requestsOf, podReq)
	cpuLim, _ := total(corev1.ResourceCPU, limitsOf, podLim)
	memLim, _ := total(corev1.ResourceMemory, limitsOf, podLim)
	var req *resource.Quantity
	if hasCPUReq {
		req = &cpuReq
	}
	resources = linuxResources(req, &cpuLim, memLim.Value(), node)
	overhead = &runtimeapi.LinuxContainerResources{}
	if pod.Spec.Overhead != nil {
		cpu := pod.Spec.Overhead.Cpu()
		overhead = linuxResources(cpu, cpu, pod.Spec.Overhead.Memory().Value(), node)
	}
	return resources, overhead
}

// CPUMemory is r's cpu and memory requests and limits alone: what an
// in-place resize changes (nil lists when there are none).
func CPUMemory(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	only := func(list corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := list[name]; ok {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q.DeepCopy()
			}
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: only(r.Requests), Limits: only(r.Limits)}
}

// CreatedResources are the cpu and memory resources container cs was
// created with (AnnotationResources); false for a container made before
// orch recorded them.
func CreatedResources(annotations map[string]string) (corev1.ResourceRequirements, bool) {
	var r corev1.ResourceRequirements
	v, ok := annotations[AnnotationResources]
	if !ok || json.Unmarshal([]byte(v), &r) != nil {
		return r, false
	}
	return r, true
}
