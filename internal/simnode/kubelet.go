package simnode

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Start renews the Leases of the simulated nodes and plays the kubelet for
// their pods until ctx ends.
func (s *Simulator) Start(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(s.client, 0)
	pods := factory.Core().V1().Pods()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		for s.next(ctx, queue, pods.Lister()) {
		}
	}()
	ticker := time.NewTicker(s.LeaseInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		for _, name := range s.heartbeating() {
			if err := s.renewLease(ctx, name); err != nil && ctx.Err() == nil {
				s.log.Warn("cannot renew the lease of a simulated node", "node", name, "err", err)
			}
		}
	}
}

// next handles one queued pod; false when the queue is shut down.
func (s *Simulator) next(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], lister corelisters.PodLister) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := lister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		queue.Forget(key)
		return true
	}
	if err == nil {
		err = s.syncPod(ctx, pod)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("simulated kubelet: retrying pod", "pod", key, "err", err)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

// syncPod moves one pod along the life a kubelet would give it.
func (s *Simulator) syncPod(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.NodeName == "" || !s.simulates(pod.Spec.NodeName) {
		return nil
	}
	pods := s.client.CoreV1().Pods(pod.Namespace)
	if pod.DeletionTimestamp != nil {
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	var want *corev1.Pod
	switch {
	case pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "":
		want = running(pod)
	case pod.Status.Phase == corev1.PodRunning && pod.Annotations[FinishAnnotation] != "":
		want = finished(pod, corev1.PodPhase(pod.Annotations[FinishAnnotation]))
	default:
		return nil
	}
	_, err := pods.UpdateStatus(ctx, want, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: the informer brings it back
	}
	return err
}

func running(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.HostIP = "192.0.2.1"
	p.Status.PodIP = fakeIP(pod)
	p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "simulated://" + c.Image, ContainerID: "simulated://" + string(pod.UID) + "/" + c.Name,
			Ready: true, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return p
}

func finished(pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	p := pod.DeepCopy()
	exit, reason := int32(0), "Completed"
	if phase != corev1.PodSucceeded {
		phase, exit, reason = corev1.PodFailed, 1, "Error"
	}
	now := metav1.Now()
	p.Status.Phase = phase
	for i := range p.Status.Conditions {
		if t := p.Status.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, "PodCompleted", now
		}
	}
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, StartedAt: started, FinishedAt: now}}
	}
	return p
}

// fakeIP gives each pod a stable address in 10.42.0.0/16.
func fakeIP(pod *corev1.Pod) string {
	h := fnv.New32a()
	h.Write([]byte(pod.UID))
	v := h.Sum32()
	return fmt.Sprintf("10.42.%d.%d", (v>>8)%256, v%254+1)
}
