package daemonset

import (
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"orch/internal/controller"
)

// addHandlers wires the informers to the queue and remembers what to wait
// for before syncing.
func (c *Controller) addHandlers(dss, revs, pods, nodes cache.SharedIndexInformer) {
	c.handle(dss, cache.ResourceEventHandlerFuncs{AddFunc: c.dsAdded, UpdateFunc: c.dsUpdated, DeleteFunc: c.dsDeleted})
	c.handle(revs, cache.ResourceEventHandlerFuncs{AddFunc: c.revisionAdded, UpdateFunc: c.revisionUpdated, DeleteFunc: c.revisionDeleted})
	c.handle(pods, cache.ResourceEventHandlerFuncs{AddFunc: c.podAdded, UpdateFunc: c.podUpdated, DeleteFunc: c.podDeleted})
	c.handle(nodes, cache.ResourceEventHandlerFuncs{AddFunc: c.nodeAdded, UpdateFunc: c.nodeUpdated, DeleteFunc: c.nodeDeleted})
}

func (c *Controller) handle(informer cache.SharedIndexInformer, h cache.ResourceEventHandler) {
	reg, err := informer.AddEventHandler(h)
	if err != nil {
		c.log.Error("cannot watch", "err", err)
		return
	}
	c.synced = append(c.synced, reg.HasSynced)
}

func (c *Controller) dsAdded(obj any) {
	if ds, ok := obj.(*appsv1.DaemonSet); ok {
		c.enqueue(ds)
	}
}

func (c *Controller) dsUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*appsv1.DaemonSet)
	cur, ok2 := newObj.(*appsv1.DaemonSet)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != cur.UID {
		// Deleted and recreated under the same name between two events.
		c.dsDeleted(cache.DeletedFinalStateUnknown{Key: controller.Key(old), Obj: old})
	}
	c.enqueue(cur)
}

func (c *Controller) dsDeleted(obj any) {
	ds, ok := controller.ObjectFrom[*appsv1.DaemonSet](obj)
	if !ok {
		return
	}
	c.exp.Forget(controller.Key(ds)) // a new one of the same name starts clean
	c.enqueue(ds)
}

// revisionAdded wakes up the DaemonSets that may adopt an orphan revision;
// a revision with a controller was created by it and needs nothing.
func (c *Controller) revisionAdded(obj any) {
	rev, ok := obj.(*appsv1.ControllerRevision)
	if !ok {
		return
	}
	if rev.DeletionTimestamp != nil {
		c.revisionDeleted(rev)
		return
	}
	if metav1.GetControllerOfNoCopy(rev) != nil {
		return
	}
	for _, ds := range c.selecting(rev) {
		c.enqueue(ds)
	}
}

func (c *Controller) revisionUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*appsv1.ControllerRevision)
	cur, ok2 := newObj.(*appsv1.ControllerRevision)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	c.ownerChanged(old, cur, !reflect.DeepEqual(old.Labels, cur.Labels))
}

func (c *Controller) revisionDeleted(obj any) {
	rev, ok := controller.ObjectFrom[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rev); ref != nil {
		if ds := c.resolve(rev.Namespace, ref); ds != nil {
			c.enqueue(ds)
		}
	}
}

// ownerChanged enqueues the old and the new controller of an updated pod
// or revision, or, for an orphan whose labels or references changed, the
// DaemonSets that may adopt it. It returns the current controller.
func (c *Controller) ownerChanged(old, cur metav1.Object, labelsChanged bool) *appsv1.DaemonSet {
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if ds := c.resolve(old.GetNamespace(), oldRef); ds != nil {
			c.enqueue(ds)
		}
	}
	if curRef != nil {
		ds := c.resolve(cur.GetNamespace(), curRef)
		if ds != nil {
			c.enqueue(ds)
		}
		return ds
	}
	if labelsChanged || refChanged {
		for _, ds := range c.selecting(cur) {
			c.enqueue(ds)
		}
	}
	return nil
}

func (c *Controller) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen first already terminating (after a restart): a deletion.
		c.podDeleted(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if ds := c.resolve(pod.Namespace, ref); ds != nil {
			c.exp.CreationObserved(controller.Key(ds))
			c.enqueue(ds)
		}
		return
	}
	for _, ds := range c.selecting(pod) {
		c.enqueue(ds)
	}
}

func (c *Controller) podUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		// A graceful deletion began: count it now, so that a replacement
		// does not wait for the kubelet.
		c.podDeleted(cur)
		return
	}
	ds := c.ownerChanged(old, cur, !reflect.DeepEqual(old.Labels, cur.Labels))
	if ds != nil && ds.Spec.MinReadySeconds > 0 && !controller.PodReady(old) && controller.PodReady(cur) {
		// Available minReadySeconds from now; nothing else will say so.
		c.delay.After(controller.Key(ds), time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
	}
}

func (c *Controller) podDeleted(obj any) {
	pod, ok := controller.ObjectFrom[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	if ds := c.resolve(pod.Namespace, ref); ds != nil {
		c.exp.DeletionObserved(controller.Key(ds), controller.Key(pod))
		c.enqueue(ds)
	}
}

func (c *Controller) nodeAdded(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		c.nodeChanged(nil, node)
	}
}

// nodeUpdated reacts to changes of labels and taints only (not to
// heartbeats).
func (c *Controller) nodeUpdated(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	cur, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if apiequality.Semantic.DeepEqual(old.Labels, cur.Labels) && apiequality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		return
	}
	c.nodeChanged(old, cur)
}

func (c *Controller) nodeDeleted(obj any) {
	if node, ok := controller.ObjectFrom[*corev1.Node](obj); ok {
		c.nodeChanged(node, nil)
	}
}

// nodeChanged enqueues the DaemonSets whose verdict about the node changed
// (old or cur is nil for an added or deleted node), and those that counted
// misscheduled pods (the change may have made them fit again).
func (c *Controller) nodeChanged(old, cur *corev1.Node) {
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		p := placementOf(ds)
		var before, after eligibility
		if old != nil {
			before = p.on(old)
		}
		if cur != nil {
			after = p.on(cur)
		}
		if before != after || ds.Status.NumberMisscheduled > 0 {
			c.enqueue(ds)
		}
	}
}
