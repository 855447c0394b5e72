package pods

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"orch/internal/kubelet/podconfig"
	"orch/internal/kubelet/sysctls"
	"orch/internal/quota"
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
// its containers' allocated cpu and memory. A pod seen for the first time
// that never started (an agent restart admits the running ones as they
// are) is first checked against the pods admitted before (rejection);
// one that does not fit fails with upstream's reason and "Pod was
// rejected" message (target is where its status goes; static pods are
// not checked). The other pods' requests are summed only then and when a
// resize is asked for.
func (w *Workers) admit(ctx context.Context, pod, target *corev1.Pod) (_ *corev1.Pod, rejected bool, err error) {
	w.admitting.Lock()
	defer w.admitting.Unlock()
	w.mu.Lock()
	prev, refused := w.resizeOf(string(pod.UID)).alloc, w.rejected[string(pod.UID)]
	w.mu.Unlock()
	if refused {
		return nil, true, nil
	}
	if prev == nil && target == pod && pod.Status.StartTime == nil {
		if w.Sysctls != nil {
			if message := w.Sysctls.Check(pod); message != "" {
				return nil, true, w.reject(ctx, pod, sysctls.ForbiddenReason, message)
			}
		}
		if reason, message := rejection(pod, w.admissionNode(ctx, pod), w.admittedPods(pod)); reason != "" {
			return nil, true, w.reject(ctx, pod, reason, message)
		}
	}
	alloc, pending := allocate(pod, prev, w.node.Allocatable, func() corev1.ResourceList { return w.otherRequests(pod) })
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.resizeOf(string(pod.UID))
	r.alloc, r.pending = alloc, pending
	return allocatedPod(pod, alloc), false, nil
}

// admissionNode is the node as admission sees it, as upstream's kubelet
// sees it in its informer: the agent's allocatable resources with the
// extended resources the Node advertises, and the Node's labels. Without
// the API (unreachable) it is the agent's resources alone, without labels.
func (w *Workers) admissionNode(ctx context.Context, pod *corev1.Pod) *corev1.Node {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: w.node.Name}, Status: corev1.NodeStatus{Allocatable: w.node.Allocatable}}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := w.client.CoreV1().Nodes().Get(ctx, w.node.Name, metav1.GetOptions{})
	if err != nil {
		w.log.Warn("cannot read the node: the pod is admitted without its labels and extended resources", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return node
	}
	node.Labels = got.Labels
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Status.Allocatable = w.node.Allocatable.DeepCopy()
	for name, q := range got.Status.Allocatable {
		if _, own := node.Status.Allocatable[name]; !own && quota.IsExtendedResourceName(string(name)) {
			if node.Status.Allocatable == nil {
				node.Status.Allocatable = corev1.ResourceList{}
			}
			node.Status.Allocatable[name] = q
		}
	}
	return node
}

// reject fails pod as upstream's kubelet refuses one: a Warning event
// with the reason and the status Failed, "Pod was rejected: <message>".
func (w *Workers) reject(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	w.recorder.Event(pod, corev1.EventTypeWarning, reason, message)
	updated := pod.DeepCopy()
	updated.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message,
		QOSClass: pod.Status.QOSClass, Conditions: pod.Status.Conditions}
	if _, err := w.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("reject pod %s/%s (%s): %w", pod.Namespace, pod.Name, reason, err)
	}
	w.mu.Lock()
	w.rejected[string(pod.UID)] = true
	w.mu.Unlock()
	return nil
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
	for _, p := range w.activePods(pod, false) {
		for name, q := range podRequests(p, specAllocation(p)) {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// admittedPods are the pods other than pod that the workers admitted
// and that have not finished, with their allocated resources.
func (w *Workers) admittedPods(pod *corev1.Pod) []*corev1.Pod {
	return w.activePods(pod, true)
}

// activePods are the node's pods other than pod that have not finished,
// each with its allocation where the workers admitted it; only the
// admitted ones if onlyAdmitted.
func (w *Workers) activePods(pod *corev1.Pod, onlyAdmitted bool) []*corev1.Pod {
	if w.lister == nil {
		return nil
	}
	pods, _ := w.lister.List(labels.Everything())
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range pods {
		if p.UID == pod.UID || p.Spec.NodeName != w.node.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var alloc map[string]corev1.ResourceRequirements
		if r := w.resize[string(p.UID)]; r != nil {
			alloc = r.alloc
		}
		switch {
		case alloc != nil:
			out = append(out, allocatedPod(p, alloc))
		case !onlyAdmitted:
			out = append(out, p)
		}
	}
	return out
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
