package pvbinder

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// bestVolume picks the volume for claim among pvs: one pre-bound to the
// claim if it fits, else (unless binding waits for the first consumer) the
// available volume with the fewest access modes and then the least storage
// that satisfies the claim. nil means none.
func bestVolume(claim *corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume, waitForConsumer bool) (*corev1.PersistentVolume, error) {
	selector := labels.Everything()
	if claim.Spec.Selector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(claim.Spec.Selector); err != nil {
			return nil, fmt.Errorf("claim %s/%s has an invalid selector: %w", claim.Namespace, claim.Name, err)
		}
	}
	var candidates []*corev1.PersistentVolume
	for _, pv := range pvs {
		if pv.DeletionTimestamp != nil || !fitsSize(pv, claim) || volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) || !sameAttributesClass(pv, claim) {
			continue
		}
		if pv.Spec.ClaimRef != nil {
			if volume.IsVolumeBoundToClaim(pv, claim) {
				return pv, nil
			}
			continue
		}
		if !waitForConsumer && pv.Status.Phase == corev1.VolumeAvailable && selector.Matches(labels.Set(pv.Labels)) &&
			volume.GetPersistentVolumeClass(pv) == volume.GetPersistentVolumeClaimClass(claim) && volume.CheckAccessModes(claim, pv) {
			candidates = append(candidates, pv)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	sort.Slice(candidates, func(i, j int) bool { return lessFitting(candidates[i], candidates[j]) })
	return candidates[0], nil
}

// lessFitting orders volumes by access modes, then storage, then name.
func lessFitting(a, b *corev1.PersistentVolume) bool {
	if len(a.Spec.AccessModes) != len(b.Spec.AccessModes) {
		return len(a.Spec.AccessModes) < len(b.Spec.AccessModes)
	}
	qa, qb := a.Spec.Capacity[corev1.ResourceStorage], b.Spec.Capacity[corev1.ResourceStorage]
	if c := qa.Cmp(qb); c != 0 {
		return c < 0
	}
	return a.Name < b.Name
}

func fitsSize(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	have, want := pv.Spec.Capacity[corev1.ResourceStorage], claim.Spec.Resources.Requests[corev1.ResourceStorage]
	return have.Cmp(want) >= 0
}

func sameAttributesClass(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	return ptr.Deref(pv.Spec.VolumeAttributesClassName, "") == ptr.Deref(claim.Spec.VolumeAttributesClassName, "")
}

// unfitReason says why a volume a claim asked for by name cannot serve it
// ("" when it can), as upstream's checks for a requested volume.
func unfitReason(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) string {
	have, want := pv.Spec.Capacity[corev1.ResourceStorage], claim.Spec.Resources.Requests[corev1.ResourceStorage]
	switch {
	case pv.DeletionTimestamp != nil:
		return fmt.Sprintf("the volume is marked for deletion %q", pv.Name)
	case have.Cmp(want) < 0:
		return "requested PV is too small"
	case volume.GetPersistentVolumeClass(pv) != volume.GetPersistentVolumeClaimClass(claim):
		return "storageClassName does not match"
	case !sameAttributesClass(pv, claim):
		return "volumeAttributesClassName does not match"
	case volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec):
		return "incompatible volumeMode"
	case !volume.CheckAccessModes(claim, pv):
		return "incompatible accessMode"
	}
	return ""
}
