package replicaset

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"orch/internal/controller"
)

// addHandlers wires the informers to the queue: owner events enqueue the
// owner; pod events enqueue the pod's controller (and record the creates
// and deletes it was waiting for), or, for an orphan, every owner whose
// selector matches it.
func (m *manager) addHandlers(pods cache.SharedIndexInformer) {
	m.kind.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { m.ownerAdded(obj) },
		UpdateFunc: m.ownerUpdated,
		DeleteFunc: m.ownerDeleted,
	})
	pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.podAdded,
		UpdateFunc: m.podUpdated,
		DeleteFunc: m.podDeleted,
	})
}

func (m *manager) ownerAdded(obj interface{}) {
	if rs, ok := m.kind.convert(obj); ok {
		m.enqueue(rs)
	}
}

func (m *manager) ownerUpdated(oldObj, newObj interface{}) {
	old, ok1 := m.kind.convert(oldObj)
	cur, ok2 := m.kind.convert(newObj)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != cur.UID {
		// Deleted and recreated under the same name between two events.
		m.ownerDeleted(cache.DeletedFinalStateUnknown{Key: controller.Key(old), Obj: oldObj})
	}
	// Every update is synced, not only spec changes: a resync then retries
	// owners whose last creates failed.
	m.enqueue(cur)
}

func (m *manager) ownerDeleted(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	rs, ok := m.kind.convert(obj)
	if !ok {
		return
	}
	key := controller.Key(rs)
	// A new object with the same name starts with clean expectations.
	m.exp.Forget(key)
	m.queue.Add(key)
}

func (m *manager) podAdded(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already terminating (e.g. after a
		// restart): that is a deletion, not a creation.
		m.podDeleted(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		rs := m.resolveControllerRef(pod.Namespace, ref)
		if rs == nil {
			return
		}
		key := controller.Key(rs)
		m.exp.CreationObserved(key)
		m.queue.Add(key)
		return
	}
	// An orphan: whoever selects it may adopt it. No one was waiting for
	// its creation.
	for _, rs := range m.selecting(pod) {
		m.enqueue(rs)
	}
}

func (m *manager) podUpdated(oldObj, newObj interface{}) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return // a resync, nothing changed
	}
	labelsChanged := !reflect.DeepEqual(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// A graceful deletion has begun: count it as the deletion now, so
		// a replacement is created without waiting for the kubelet.
		m.podDeleted(cur)
		if labelsChanged {
			m.podDeleted(old)
		}
		return
	}
	curRef := metav1.GetControllerOfNoCopy(cur)
	oldRef := metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if rs := m.resolveControllerRef(old.Namespace, oldRef); rs != nil {
			m.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := m.resolveControllerRef(cur.Namespace, curRef)
		if rs == nil {
			return
		}
		m.enqueue(rs)
		// A pod that just became ready becomes available minReadySeconds
		// later; nothing else will tell us then.
		if !controller.PodReady(old) && controller.PodReady(cur) && rs.Spec.MinReadySeconds > 0 {
			m.delay.After(controller.Key(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		for _, rs := range m.selecting(cur) {
			m.enqueue(rs)
		}
	}
}

func (m *manager) podDeleted(obj interface{}) {
	pod, ok := controller.ObjectFrom[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	rs := m.resolveControllerRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key := controller.Key(rs)
	m.exp.DeletionObserved(key, controller.Key(pod))
	m.queue.Add(key)
}
