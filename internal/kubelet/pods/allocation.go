package pods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"orch/internal/kubelet/podconfig"
)

// podResize is what the workers keep of a pod for in-place resize
// (resize.go): its allocation, the resize that waits, the last update's
// failure, and the resources of its containers updated in place.
type podResize struct {
	alloc   map[string]corev1.ResourceRequirements // by container name
	pending *corev1.PodCondition
	failure string
	updated map[string]corev1.ResourceRequirements // by container ID
}

// admit decides pod's allocation and returns the pod to run: pod with
// its containers' allocated cpu and memory.
// The other pods' requests are summed only when a resize is asked for.
func (w *Workers) admit(pod *corev1.Pod) *corev1.Pod {
	w.mu.Lock()
	prev := w.resizeOf(string(pod.UID)).alloc
	w.mu.Unlock()
	alloc, pending := allocate(pod, prev, w.node.Allocatable, func() corev1.ResourceList { return w.otherRequests(pod) })
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.resizeOf(string(pod.UID))
	r.alloc, r.pending = alloc, pending
	return allocatedPod(pod, alloc)
}

// resizeOf is the resize state of the pod with uid (w.mu held).
func (w *Workers) resizeOf(uid string) *podResize {
	r := w.resize[uid]
	if r == nil {
		r = &podResize{updated: map[string]corev1.ResourceRequirements{}}
		w.resize[uid] = r
	}
	return r
}

// otherRequests are the cpu and memory requests of the node's pods other
// than pod that have not finished, by their allocation where the workers
// admitted them.
func (w *Workers) otherRequests(pod *corev1.Pod) corev1.ResourceList {
	total := corev1.ResourceList{}
	if w.lister == nil {
		return total
	}
	pods, _ := w.lister.List(labels.Everything())
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range pods {
		if p.UID == pod.UID || p.Spec.NodeName != w.node.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var alloc map[string]corev1.ResourceRequirements
		if r := w.resize[string(p.UID)]; r != nil {
			alloc = r.alloc
		}
		if alloc == nil {
			alloc = specAllocation(p)
		}
		for name, q := range podRequests(p, alloc) {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// resizeSnapshot is a copy of the resize state of the pod with uid.
func (w *Workers) resizeSnapshot(uid string) (updated map[string]corev1.ResourceRequirements, pending *corev1.PodCondition, failure string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.resize[uid]
	if r == nil {
		return nil, nil, ""
	}
	updated = map[string]corev1.ResourceRequirements{}
	for id, res := range r.updated {
		updated[id] = *res.DeepCopy()
	}
	return updated, r.pending.DeepCopy(), r.failure
}

// resizeContainer updates running container id of c to c's resources (pod
// is the allocated pod).
func (w *Workers) resizeContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string) error {
	err := w.containers.UpdateContainerResources(ctx, id, podconfig.ContainerResources(pod, c, w.node))
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.resizeOf(string(pod.UID))
	if err != nil {
		r.failure = fmt.Sprintf("resize of container %s: %v", c.Name, err)
		return fmt.Errorf("update the resources of container %q: %w", c.Name, err)
	}
	r.failure = ""
	r.updated[id] = podconfig.CPUMemory(c.Resources)
	return nil
}
