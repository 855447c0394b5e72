package job

import (
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"orch/internal/controller"
)

func (c *Controller) jobAdded(obj interface{}) {
	if job, ok := obj.(*batchv1.Job); ok {
		c.enqueue(job)
	}
}

func (c *Controller) jobUpdated(_, newObj interface{}) {
	job, ok := newObj.(*batchv1.Job)
	if !ok {
		return
	}
	c.enqueue(job)
	if isFinished(job) {
		// A finished job is not synced again; pods it still holds with a
		// finalizer are released here.
		c.releaseFinalizers(job)
	}
}

func (c *Controller) jobDeleted(obj interface{}) {
	job, ok := controller.ObjectFrom[*batchv1.Job](obj)
	if !ok {
		return
	}
	c.enqueue(job)
	c.releaseFinalizers(job)
}

// releaseFinalizers queues the pods job controls that still carry the
// tracking finalizer for its removal.
func (c *Controller) releaseFinalizers(job *batchv1.Job) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		sel = labels.Everything()
	}
	pods, err := c.pods.Pods(job.Namespace).List(sel)
	if err != nil {
		return
	}
	for _, pod := range pods {
		if metav1.IsControlledBy(pod, job) && hasFinalizer(pod) {
			c.enqueueOrphan(pod)
		}
	}
}

func (c *Controller) podAdded(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// First seen already terminating (e.g. after a restart): that is
		// a deletion, not a creation.
		c.podDeleted(pod, false)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if job := c.resolveControllerRef(pod.Namespace, ref); job != nil {
			c.exp.creationObserved(controller.Key(job))
			c.enqueue(job)
		}
		return
	}
	if hasFinalizer(pod) {
		c.enqueueOrphan(pod)
	}
	for _, job := range c.selecting(pod) {
		c.enqueue(job)
	}
}

func (c *Controller) podUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		c.podDeleted(cur, false)
		return
	}
	finalizerGone := !hasFinalizer(cur)
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := c.resolveControllerRef(old.Namespace, oldRef); job != nil {
			c.podChanged(job, cur, finalizerGone)
		}
	}
	if curRef != nil {
		if job := c.resolveControllerRef(cur.Namespace, curRef); job != nil {
			c.podChanged(job, cur, finalizerGone)
		}
		return
	}
	if hasFinalizer(cur) {
		c.enqueueOrphan(cur)
	}
	if refChanged || !reflect.DeepEqual(old.Labels, cur.Labels) {
		for _, job := range c.selecting(cur) {
			c.enqueue(job)
		}
	}
}

func (c *Controller) podChanged(job *batchv1.Job, pod *corev1.Pod, finalizerGone bool) {
	if finalizerGone {
		c.exp.finalizerRemovalObserved(controller.Key(job), string(pod.UID))
	}
	c.enqueue(job)
}

// podDeleted handles a pod that is gone (final) or being deleted.
func (c *Controller) podDeleted(obj interface{}, final bool) {
	pod, ok := controller.ObjectFrom[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	var job *batchv1.Job
	if ref != nil {
		job = c.resolveControllerRef(pod.Namespace, ref)
	}
	if job == nil || isFinished(job) {
		// No running job will remove its finalizer.
		if hasFinalizer(pod) {
			c.enqueueOrphan(pod)
		}
		return
	}
	key := controller.Key(job)
	c.exp.deletionObserved(key)
	if final || !hasFinalizer(pod) {
		c.exp.finalizerRemovalObserved(key, string(pod.UID))
	}
	c.enqueue(job)
}
