package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// ObjectFrom returns the object an informer handler was given as a T,
// looking inside a cache.DeletedFinalStateUnknown (a delete the watch
// missed); ok is false when it is not a T.
func ObjectFrom[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// EnqueueKey returns an informer handler that calls add (a queue's Add)
// with the key of the object it is given, a DeletedFinalStateUnknown's too.
func EnqueueKey(add func(string)) func(obj any) {
	return func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			add(key)
		}
	}
}

// EnqueueHandlers returns informer handlers that call add with the key of
// an object that is added, updated (the new object's) or deleted.
func EnqueueHandlers(add func(string)) cache.ResourceEventHandlerFuncs {
	enqueue := EnqueueKey(add)
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
		DeleteFunc: enqueue,
	}
}

// ResolveControllerRef returns the owner that ref, a pod's controller
// reference in its namespace, points to: found with get (a namespaced
// lister's Get), if ref is of kind and the owner still has ref's UID (is not
// a new object of the same name). Otherwise it returns the zero T (nil).
func ResolveControllerRef[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) T {
	var none T
	if ref.Kind != kind {
		return none
	}
	owner, err := get(ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return none
	}
	return owner
}
