package deployment

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"orch/internal/controller"
)

func (c *Controller) deploymentChanged(obj interface{}) {
	if d, ok := controller.ObjectFrom[*appsv1.Deployment](obj); ok {
		c.queue.Add(controller.Key(d))
	}
}

// replicaSetAdded wakes the Deployment that controls rs or, for an orphan,
// every Deployment that selects it (one may adopt it).
func (c *Controller) replicaSetAdded(obj interface{}) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if rs.DeletionTimestamp != nil {
		c.replicaSetDeleted(rs)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.queue.Add(controller.Key(d))
		}
		return
	}
	for _, d := range c.selecting(rs) {
		c.queue.Add(controller.Key(d))
	}
}

func (c *Controller) replicaSetUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*appsv1.ReplicaSet)
	cur, ok2 := newObj.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if d := c.resolveControllerRef(old.Namespace, oldRef); d != nil {
			c.queue.Add(controller.Key(d))
		}
	}
	if curRef != nil {
		if d := c.resolveControllerRef(cur.Namespace, curRef); d != nil {
			c.queue.Add(controller.Key(d))
		}
		return
	}
	if refChanged || !reflect.DeepEqual(cur.Labels, old.Labels) {
		for _, d := range c.selecting(cur) {
			c.queue.Add(controller.Key(d))
		}
	}
}

func (c *Controller) replicaSetDeleted(obj interface{}) {
	rs, ok := controller.ObjectFrom[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.queue.Add(controller.Key(d))
		}
	}
}

// podDeleted wakes a Recreate Deployment: it waits for every old pod to be
// gone before it scales the new ReplicaSet up.
func (c *Controller) podDeleted(obj interface{}) {
	pod, ok := controller.ObjectFrom[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	rs := controller.ResolveControllerRef(ref, "ReplicaSet", c.rsLister.ReplicaSets(pod.Namespace).Get)
	if rs == nil {
		return
	}
	dref := metav1.GetControllerOfNoCopy(rs)
	if dref == nil {
		return
	}
	if d := c.resolveControllerRef(rs.Namespace, dref); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.queue.Add(controller.Key(d))
	}
}

// resolveControllerRef returns the Deployment ref points to, if it still
// has the same UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	return controller.ResolveControllerRef(ref, controllerKind.Kind, c.dLister.Deployments(namespace).Get)
}

// selecting returns the Deployments whose selector matches rs's labels.
func (c *Controller) selecting(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	all, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range all {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	if len(out) > 1 {
		c.log.Info("more than one deployment selects the replica set; only its controller manages it", "replicaSet", controller.Key(rs))
	}
	return out
}

func indexPodByOwner(obj interface{}) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	return []string{ownerIndexKey(pod.Namespace, metav1.GetControllerOfNoCopy(pod))}, nil
}

func ownerIndexKey(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return namespace
	}
	return namespace + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
}
