package pods

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch/internal/kubelet/podconfig"
)

// In-place resize (pods/resize), as upstream's kubelet does it with its
// alpha gates off (containers and sidecars; no pod-level resources):
//
//   - allocation: the cpu and memory the kubelet admitted for each
//     container. A resize (spec resources other than the allocation) is
//     admitted when the pod's requests then fit the node's allocatable
//     beside the other pods' (allocate); otherwise it waits, in the pod's
//     PodResizePending condition: Infeasible when the node could never
//     hold it, Deferred when other pods are in the way. Containers are
//     created and actuated from the allocated pod (allocatedPod).
//   - actuation: a running container whose resources (as created, from
//     its AnnotationResources, or as last updated) differ from its
//     allocation gets UpdateContainerResources, or is restarted when its
//     resizePolicy says RestartContainer for a resource that changed
//     (resizeActions).
//   - status: allocatedResources and resources in each container's
//     status, and PodResizeInProgress while an allocation is not yet
//     actuated (resizeStatus).
//
// The allocation and the updated resources are kept in memory: after an
// agent restart the allocation starts again from the spec, and a
// container updated in place is updated again (to the same values).

// allocate decides pod's allocation (cpu and memory of each container and
// sidecar, by name) from its spec and prev, its allocation so far (nil for
// a pod not yet admitted), and returns the PodResizePending condition when
// a resize must wait. others gives the cpu and memory requests of the
// node's other pods; it is called only for a resize.
func allocate(pod *corev1.Pod, prev map[string]corev1.ResourceRequirements, allocatable corev1.ResourceList, others func() corev1.ResourceList) (map[string]corev1.ResourceRequirements, *corev1.PodCondition) {
	want := specAllocation(pod)
	if prev == nil || sameAllocation(want, prev) {
		return want, nil
	}
	requests, usedByOthers := podRequests(pod, want), others()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, capacity := requests[name], allocatable[name]
		if _, known := allocatable[name]; !known {
			continue
		}
		if req.Cmp(capacity) > 0 {
			return prev, &corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible,
				Message: fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", name, amount(name, req), amount(name, capacity))}
		}
		used := usedByOthers[name]
		total := used.DeepCopy()
		total.Add(req)
		if total.Cmp(capacity) > 0 {
			return prev, &corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred,
				Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, amount(name, req), amount(name, used), amount(name, capacity))}
		}
	}
	return want, nil
}

// specAllocation is the allocation pod's spec asks for.
func specAllocation(pod *corev1.Pod) map[string]corev1.ResourceRequirements {
	out := map[string]corev1.ResourceRequirements{}
	for _, c := range resizable(pod) {
		out[c.Name] = podconfig.CPUMemory(c.Resources)
	}
	return out
}

// amount is q in upstream's units for the messages: milli-CPUs, bytes.
func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// resizable are the containers whose resources may be resized: the
// regular ones and the sidecars.
func resizable(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// podRequests are the cpu and memory requests of pod with alloc: the sum
// over its containers and sidecars, or a plain init container's when that
// is larger (upstream's effective requests, less overhead).
func podRequests(pod *corev1.Pod, alloc map[string]corev1.ResourceRequirements) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		var sum resource.Quantity
		for _, c := range resizable(pod) {
			r := alloc[c.Name]
			sum.Add(*requestOf(r, name))
		}
		for i := range pod.Spec.InitContainers {
			if c := &pod.Spec.InitContainers[i]; !isSidecar(c) {
				if q := requestOf(c.Resources, name); q.Cmp(sum) > 0 {
					sum = q.DeepCopy()
				}
			}
		}
		out[name] = sum
	}
	return out
}

// requestOf is r's request of name, or its limit (which the request
// defaults to).
func requestOf(r corev1.ResourceRequirements, name corev1.ResourceName) *resource.Quantity {
	if q, ok := r.Requests[name]; ok {
		return &q
	}
	if q, ok := r.Limits[name]; ok {
		return &q
	}
	return &resource.Quantity{}
}

func sameAllocation(a, b map[string]corev1.ResourceRequirements) bool {
	if len(a) != len(b) {
		return false
	}
	for name, r := range a {
		o, ok := b[name]
		if !ok || !sameResources(r, o) {
			return false
		}
	}
	return true
}

// sameResources compares the cpu and memory requests and limits of a and b
// by value (2m equals 0.002).
func sameResources(a, b corev1.ResourceRequirements) bool {
	return sameList(a.Requests, b.Requests) && sameList(a.Limits, b.Limits)
}

func sameList(a, b corev1.ResourceList) bool {
	return sameQuantity(a, b, corev1.ResourceCPU) && sameQuantity(a, b, corev1.ResourceMemory)
}

// sameQuantity says whether a and b both lack name or have equal amounts.
func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	qa, inA := a[name]
	qb, inB := b[name]
	return inA == inB && (!inA || qa.Cmp(qb) == 0)
}

// allocatedPod is pod with its containers' cpu and memory as alloc has
// them (pod itself when they are the same).
func allocatedPod(pod *corev1.Pod, alloc map[string]corev1.ResourceRequirements) *corev1.Pod {
	same := true
	for _, c := range resizable(pod) {
		if r, ok := alloc[c.Name]; ok && !sameResources(podconfig.CPUMemory(c.Resources), r) {
			same = false
		}
	}
	if same {
		return pod
	}
	out := pod.DeepCopy()
	for _, c := range resizable(out) {
		r, ok := alloc[c.Name]
		if !ok {
			continue
		}
		c.Resources.Requests = withCPUMemory(c.Resources.Requests, r.Requests)
		c.Resources.Limits = withCPUMemory(c.Resources.Limits, r.Limits)
	}
	return out
}

// withCPUMemory is list with its cpu and memory those of from.
func withCPUMemory(list, from corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			out[name] = q
		}
	}
	for name, q := range from {
		out[name] = q
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// actuated are the cpu and memory resources running container cs has:
// those it was last updated to, else those it was created with; false
// when neither is known (a container made before orch recorded them).
func actuated(cs *runtimeapi.ContainerStatus, updated map[string]corev1.ResourceRequirements) (corev1.ResourceRequirements, bool) {
	if r, ok := updated[cs.Id]; ok {
		return r, true
	}
	return podconfig.CreatedResources(cs.GetAnnotations())
}

// resizeActions bring running container cs of c (allocated) to its
// allocation: an update of its resources in place, or, when c's
// resizePolicy says RestartContainer for a resource that changed, a
// restart.
func resizeActions(pod *corev1.Pod, c *corev1.Container, r role, cs *runtimeapi.ContainerStatus, hist []*runtimeapi.ContainerStatus, updated map[string]corev1.ResourceRequirements) []action {
	have, ok := actuated(cs, updated)
	want := podconfig.CPUMemory(c.Resources)
	if !ok {
		// Made before orch recorded resources: what changed is unknown, so
		// the allocation is applied in place once, and known from then on.
		return []action{{kind: resizeContainer, container: c, role: r, id: cs.Id}}
	}
	if sameResources(have, want) {
		return nil
	}
	var restart []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		changed := !sameQuantity(have.Requests, want.Requests, name) || !sameQuantity(have.Limits, want.Limits, name)
		if changed && resizePolicy(c, name) == corev1.RestartContainer {
			restart = append(restart, string(name))
		}
	}
	if len(restart) == 0 {
		return []action{{kind: resizeContainer, container: c, role: r, id: cs.Id}}
	}
	return []action{
		{kind: killContainer, container: c, role: r, id: cs.Id, grace: gracePeriod(pod),
			reason: fmt.Sprintf("resize of %s requires a restart", strings.Join(restart, " and "))},
		{kind: createContainer, container: c, role: r, attempt: cs.GetMetadata().GetAttempt() + 1, remove: containerIDs(hist[1:])},
	}
}

// resizePolicy is c's restart policy for resizing name (NotRequired when
// it names none).
func resizePolicy(c *corev1.Container, name corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return corev1.NotRequired
}

// resizeStatus sets, in s (made from allocated, the pod with its
// allocation), each container's allocatedResources and resources (the
// allocation; for a running container, the cpu and memory it has), and
// the resize conditions: pending (nil for none), and PodResizeInProgress
// while a running container's resources differ from its allocation, with
// reason Error and failure when the last update failed (a failure no
// longer matters once nothing is in progress).
func resizeStatus(s *corev1.PodStatus, allocated *corev1.Pod, state podState, updated map[string]corev1.ResourceRequirements, pending *corev1.PodCondition, failure string, now time.Time) {
	inProgress := false
	set := func(statuses []corev1.ContainerStatus, c *corev1.Container) {
		cs := findStatus(statuses, c.Name)
		if cs == nil {
			return
		}
		cs.AllocatedResources = nil
		if len(c.Resources.Requests) > 0 {
			cs.AllocatedResources = c.Resources.Requests.DeepCopy()
		}
		res := corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy(), Limits: c.Resources.Limits.DeepCopy()}
		if rs := state.active[c.Name]; rs != nil && rs.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if have, ok := actuated(rs, updated); ok && !sameResources(have, podconfig.CPUMemory(c.Resources)) {
				inProgress = true
				res.Requests = withCPUMemory(res.Requests, have.Requests)
				res.Limits = withCPUMemory(res.Limits, have.Limits)
			}
		}
		cs.Resources = &res
	}
	for i := range allocated.Spec.InitContainers {
		if c := &allocated.Spec.InitContainers[i]; isSidecar(c) {
			set(s.InitContainerStatuses, c)
		}
	}
	for i := range allocated.Spec.Containers {
		set(s.ContainerStatuses, &allocated.Spec.Containers[i])
	}
	var resize []corev1.PodCondition
	if pending != nil {
		resize = append(resize, *pending)
	}
	if inProgress {
		c := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
		if failure != "" {
			c.Reason, c.Message = corev1.PodReasonError, failure
		}
		resize = append(resize, c)
	}
	for i := range resize {
		resize[i].ObservedGeneration = allocated.Generation
	}
	keepTransitionTimes(resize, s.Conditions, now)
	conds := resize
	for _, c := range s.Conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			conds = append(conds, c)
		}
	}
	s.Conditions = conds
}
