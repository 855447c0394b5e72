package garbagecollector

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// reportInvalidNamespaceOwnerRef records upstream's OwnerRefInvalidNamespace
// warning on the dependent n.
func (gb *graphBuilder) reportInvalidNamespaceOwnerRef(n *node, ownerUID types.UID) {
	for _, ref := range n.getOwners() {
		if ref.UID != ownerUID {
			continue
		}
		invalid := objectReference{OwnerReference: coordinates(ref), Namespace: n.identity.Namespace}
		gb.recorder.Eventf(&corev1.ObjectReference{
			Kind: n.identity.Kind, APIVersion: n.identity.APIVersion, Namespace: n.identity.Namespace,
			Name: n.identity.Name, UID: n.identity.UID,
		}, corev1.EventTypeWarning, "OwnerRefInvalidNamespace",
			"ownerRef %s does not resolve to a parent with matching namespace", invalid)
		return
	}
}

// ownerRefPair is one ownerReference before and after an update.
type ownerRefPair struct {
	oldRef metav1.OwnerReference
	newRef metav1.OwnerReference
}

// referencesDiffs compares two ownerReferences lists by uid.
func referencesDiffs(old, new []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []ownerRefPair) {
	oldByUID := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, ref := range old {
		oldByUID[ref.UID] = ref
	}
	for _, ref := range new {
		prev, ok := oldByUID[ref.UID]
		if !ok {
			added = append(added, ref)
			continue
		}
		if !reflect.DeepEqual(prev, ref) {
			changed = append(changed, ownerRefPair{oldRef: prev, newRef: ref})
		}
		delete(oldByUID, ref.UID)
	}
	for _, ref := range old {
		if _, ok := oldByUID[ref.UID]; ok {
			removed = append(removed, ref)
		}
	}
	return added, removed, changed
}

// deletionStartsWithFinalizer is true when the object is now being deleted
// with finalizer and was not before.
func deletionStartsWithFinalizer(oldObj any, accessor metav1.Object, finalizer string) bool {
	if !beingDeleted(accessor) || !hasFinalizer(accessor, finalizer) {
		return false
	}
	if oldObj == nil {
		return true
	}
	old, err := meta.Accessor(oldObj)
	if err != nil {
		return false
	}
	return !beingDeleted(old) || !hasFinalizer(old, finalizer)
}

func beingDeleted(accessor metav1.Object) bool {
	return accessor.GetDeletionTimestamp() != nil
}

func hasFinalizer(accessor metav1.Object, finalizer string) bool {
	for _, f := range accessor.GetFinalizers() {
		if f == finalizer {
			return true
		}
	}
	return false
}

func isTrue(b *bool) bool {
	return b != nil && *b
}
