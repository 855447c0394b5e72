package pvbinder

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/volume"
)

// bind binds volume and claim to each other in upstream's order: the
// volume's claimRef, the volume's phase, the claim's volumeName and
// annotations, the claim's status. Each step is skipped when already done,
// and a failed step is finished by the next sync.
func (c *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	pv, err := c.bindVolume(ctx, pv, claim)
	if err != nil {
		return err
	}
	if pv, err = c.setVolumePhase(ctx, pv, corev1.VolumeBound); err != nil {
		return err
	}
	if claim, err = c.bindClaim(ctx, claim, pv); err != nil {
		return err
	}
	return c.setClaimStatus(ctx, claim, corev1.ClaimBound, pv)
}

// bindVolume points the volume's claimRef at claim (with its UID).
func (c *Controller) bindVolume(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	bound, dirty, err := volume.GetBindVolumeToClaim(pv, claim)
	if err != nil || !dirty {
		return pv, err
	}
	return c.client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{})
}

// bindClaim sets the claim's volumeName and the bind annotations.
func (c *Controller) bindClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	updated := claim.DeepCopy()
	if updated.Spec.VolumeName != pv.Name {
		updated.Spec.VolumeName = pv.Name
		if !metav1.HasAnnotation(updated.ObjectMeta, volume.AnnBoundByController) {
			metav1.SetMetaDataAnnotation(&updated.ObjectMeta, volume.AnnBoundByController, "yes")
		}
	}
	if !metav1.HasAnnotation(updated.ObjectMeta, volume.AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, volume.AnnBindCompleted, "yes")
	}
	if apiequality.Semantic.DeepEqual(updated, claim) {
		return claim, nil
	}
	return c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
}

// setClaimStatus writes the claim's phase and, from pv (nil for none),
// its access modes, capacity and current volumeAttributesClass.
func (c *Controller) setClaimStatus(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) error {
	updated := claim.DeepCopy()
	updated.Status.Phase = phase
	if pv == nil {
		updated.Status.AccessModes, updated.Status.Capacity, updated.Status.CurrentVolumeAttributesClassName = nil, nil, nil
	} else {
		if _, ok := pv.Spec.Capacity[corev1.ResourceStorage]; !ok {
			return fmt.Errorf("PersistentVolume %q is without a storage capacity", pv.Name)
		}
		updated.Status.AccessModes = pv.Spec.AccessModes
		if claim.Status.Phase != phase {
			updated.Status.Capacity = pv.Spec.Capacity
			updated.Status.CurrentVolumeAttributesClassName = pv.Spec.VolumeAttributesClassName
		}
	}
	if apiequality.Semantic.DeepEqual(updated.Status, claim.Status) {
		return nil
	}
	_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

// setVolumePhase writes the volume's phase (clearing its message).
func (c *Controller) setVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase) (*corev1.PersistentVolume, error) {
	return c.setVolumePhaseMessage(ctx, pv, phase, "")
}

func (c *Controller) setVolumePhaseMessage(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, message string) (*corev1.PersistentVolume, error) {
	if pv.Status.Phase == phase {
		return pv, nil
	}
	updated := pv.DeepCopy()
	updated.Status.Phase, updated.Status.Message = phase, message
	return c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
}
