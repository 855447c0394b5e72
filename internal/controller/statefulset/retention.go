package statefulset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The persistentVolumeClaimRetentionPolicy is carried out by the garbage
// collector through ownerReferences on the claims, as upstream does:
//
//	whenDeleted=Delete: the set owns the claims of the pods it runs, so
//	                    deleting the set deletes them;
//	whenScaled=Delete:  the pod owns the claim once its ordinal is scaled
//	                    away, so deleting the pod deletes it.
//
// Retain means no such reference. A claim another controller manages is
// left alone.

var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

const (
	retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	del    = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
)

func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: retain, WhenScaled: retain}
	if set.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		p = *set.Spec.PersistentVolumeClaimRetentionPolicy
	}
	return p
}

// refersTo reports whether ref names obj of kind gvk (by name, whatever
// the UID).
func refersTo(ref *metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

// hasOwner reports whether target has a reference to owner's UID.
func hasOwner(target, owner metav1.Object) bool {
	for _, ref := range target.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// hasStaleOwner reports whether claim refers by name to obj but with
// another UID (an earlier object of the same name).
func hasStaleOwner(claim *corev1.PersistentVolumeClaim, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	for _, ref := range claim.OwnerReferences {
		if refersTo(&ref, obj, gvk) {
			return ref.UID != obj.GetUID()
		}
	}
	return false
}

// hasOtherController reports whether the claim is controlled by someone
// other than set and pod (or by an earlier set or pod of the same name),
// when the policy would have us own it at all.
func hasOtherController(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	p := retentionPolicy(set)
	if p.WhenScaled == retain && p.WhenDeleted == retain {
		return false
	}
	for _, ref := range claim.OwnerReferences {
		switch {
		case refersTo(&ref, set, controllerKind):
			if ref.UID != set.UID {
				return true
			}
		case refersTo(&ref, pod, podKind):
			if ref.UID != pod.UID {
				return true
			}
		case ref.Controller != nil && *ref.Controller:
			return true
		}
	}
	return false
}

// hasNonControllerRef reports whether set or pod own the claim without
// being marked its controller (a reference to fix).
func hasNonControllerRef(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	for _, ref := range claim.OwnerReferences {
		if (ref.UID == set.UID || ref.UID == pod.UID) && (ref.Controller == nil || !*ref.Controller) {
			return true
		}
	}
	return false
}

// wantOwners says which of set and pod should own pod's claim under the
// policy.
func wantOwners(set *appsv1.StatefulSet, pod *corev1.Pod) (bySet, byPod bool) {
	p := retentionPolicy(set)
	scaledDown := !inOrdinalRange(set, pod)
	bySet = p.WhenDeleted == del && (p.WhenScaled == retain || !scaledDown)
	byPod = p.WhenScaled == del && scaledDown
	return bySet, byPod
}

// claimOwnersUpToDate reports whether claim's references already say what
// the policy wants.
func claimOwnersUpToDate(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	if hasStaleOwner(claim, set, controllerKind) || hasStaleOwner(claim, pod, podKind) {
		// The garbage collector is about to delete it; nothing to change.
		return true
	}
	if hasOtherController(claim, set, pod) {
		return !hasOwner(claim, set) && !hasOwner(claim, pod)
	}
	if hasNonControllerRef(claim, set, pod) {
		return false
	}
	bySet, byPod := wantOwners(set, pod)
	return hasOwner(claim, set) == bySet && hasOwner(claim, pod) == byPod
}

// setClaimOwners rewrites claim's references to set and pod to what the
// policy wants; references to others are kept.
func setClaimOwners(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) {
	other := hasOtherController(claim, set, pod)
	refs := []metav1.OwnerReference{}
	for _, ref := range claim.OwnerReferences {
		if !refersTo(&ref, set, controllerKind) && !refersTo(&ref, pod, podKind) {
			refs = append(refs, ref)
		}
	}
	if !other {
		bySet, byPod := wantOwners(set, pod)
		if bySet {
			refs = append(refs, *metav1.NewControllerRef(set, controllerKind))
		}
		if byPod && pod.UID != "" {
			refs = append(refs, *metav1.NewControllerRef(pod, podKind))
		}
	}
	claim.OwnerReferences = refs
}
