package server

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRILister lists the runtime's sandboxes and containers (*cri.Runtime is one).
type CRILister interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// CRIFinder finds containers by the labels the kubelet puts on them
// (io.kubernetes.pod.namespace, .name, .uid and io.kubernetes.container.name).
// The newest container of a name is the current attempt, the one before it
// the previous. When Pods knows the pod, only its UID's containers count,
// and its status explains why a container has no logs yet, with upstream's
// messages.
type CRIFinder struct {
	Runtime CRILister
	// Pods are the node's pods with their status; nil to go by labels alone.
	Pods func() []*corev1.Pod
}

var _ ContainerFinder = (*CRIFinder)(nil)

// NewCRIFinder returns a finder over rt; pods may be nil.
func NewCRIFinder(rt CRILister, pods func() []*corev1.Pod) *CRIFinder {
	return &CRIFinder{Runtime: rt, Pods: pods}
}

func (f *CRIFinder) pod(namespace, name string) *corev1.Pod {
	if f.Pods == nil {
		return nil
	}
	for _, p := range f.Pods() {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

func podSelector(pod *corev1.Pod, namespace, name string) map[string]string {
	sel := map[string]string{labelPodNamespace: namespace, labelPodName: name}
	if pod != nil && pod.UID != "" {
		sel[labelPodUID] = string(pod.UID)
	}
	return sel
}

// FindContainer implements ContainerFinder.
func (f *CRIFinder) FindContainer(ctx context.Context, namespace, name, container string, previous bool) (string, error) {
	pod := f.pod(namespace, name)
	sel := podSelector(pod, namespace, name)
	sel[labelContainerName] = container
	list, err := f.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return "", err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].CreatedAt > list[j].CreatedAt })
	i := 0
	if previous {
		i = 1
	}
	if i < len(list) {
		return list[i].Id, nil
	}
	if pod != nil {
		if err := statusError(pod, container, previous); err != nil {
			return "", err
		}
	}
	if previous {
		return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, name)
	}
	return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, name)
}

// statusError explains from the pod's status why the container has no
// attempt to read, as upstream's kubelet words it; nil when the status
// does not tell.
func statusError(pod *corev1.Pod, container string, previous bool) error {
	var st *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				st = &list[i]
			}
		}
	}
	switch {
	case st == nil:
		return fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	case previous:
		return fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
	case st.State.Terminated != nil:
		return fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
	case st.State.Waiting != nil:
		switch reason := st.State.Waiting.Reason; reason {
		case "ErrImagePull":
			return fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case "ImagePullBackOff":
			return fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		default:
			return fmt.Errorf("container %q in pod %q is waiting to start: %v", container, pod.Name, reason)
		}
	}
	return nil
}

// FindSandbox implements ContainerFinder: the newest ready sandbox.
func (f *CRIFinder) FindSandbox(ctx context.Context, namespace, name string) (string, error) {
	sel := podSelector(f.pod(namespace, name), namespace, name)
	list, err := f.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel,
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("pod %q has no running sandbox on this node: %w", name, ErrNotFound)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].CreatedAt > list[j].CreatedAt })
	return list[0].Id, nil
}
