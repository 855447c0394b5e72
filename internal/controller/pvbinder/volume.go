package pvbinder

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/volume"
)

func (c *Controller) syncVolumeByName(ctx context.Context, name string) error {
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.syncVolume(ctx, pv)
}

// syncVolume keeps a volume's phase in line with its claim: Available while
// free or only reserved, Bound while its claim is bound to it, Released
// (and reclaimed) once its claim is gone.
func (c *Controller) syncVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		_, err := c.setVolumePhase(ctx, pv, corev1.VolumeAvailable)
		return err
	}
	claim, err := c.claimOf(ctx, pv)
	if err != nil {
		return err
	}
	switch {
	case claim == nil:
		return c.release(ctx, pv)
	case claim.Spec.VolumeName == "":
		if volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
			c.recorder.Event(pv, corev1.EventTypeWarning, "VolumeMismatch", fmt.Sprintf("Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name))
			c.recorder.Event(claim, corev1.EventTypeWarning, "VolumeMismatch", fmt.Sprintf("Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", pv.Name))
			return nil
		}
		// Reserved for the claim (by the scheduler or a user): the claim's
		// sync finishes the binding.
		c.queue.Add(claimPrefix + claim.Namespace + "/" + claim.Name)
		return nil
	case claim.Spec.VolumeName == pv.Name:
		_, err := c.setVolumePhase(ctx, pv, corev1.VolumeBound)
		return err
	case metav1.HasAnnotation(pv.ObjectMeta, volume.AnnDynamicallyProvisioned) && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that got another volume: not needed.
		return c.release(ctx, pv)
	}
	return c.unbindVolume(ctx, pv)
}

// claimOf returns the claim the volume is bound to, nil when it is gone
// (asking the apiserver before concluding that, as the cache may lag).
func (c *Controller) claimOf(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if claim != nil && claim.UID == ref.UID {
		return claim, nil
	}
	if pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed {
		return nil, nil
	}
	claim, err = c.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case claim.UID != ref.UID:
		return nil, nil
	}
	return claim, nil
}

// release marks the volume Released and applies its reclaim policy.
func (c *Controller) release(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
		var err error
		if pv, err = c.setVolumePhase(ctx, pv, corev1.VolumeReleased); err != nil {
			return err
		}
		c.log.Info("volume released; applying its reclaim policy", "volume", pv.Name, "policy", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRetain:
		return nil
	case corev1.PersistentVolumeReclaimDelete:
		return c.deleteVolume(ctx, pv)
	case corev1.PersistentVolumeReclaimRecycle:
		return c.failVolume(ctx, pv, "VolumeFailedRecycle", "No recycler plugin found for the volume!")
	}
	return c.failVolume(ctx, pv, "VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy")
}

// deleteVolume deletes the PersistentVolume object. There is no backing
// storage to delete here; a volume an external provisioner created is left
// for that provisioner to delete.
func (c *Controller) deleteVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	if by := pv.Annotations[volume.AnnDynamicallyProvisioned]; by != "" {
		return nil
	}
	err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func (c *Controller) failVolume(ctx context.Context, pv *corev1.PersistentVolume, reason, message string) error {
	if pv.Status.Phase == corev1.VolumeFailed {
		return nil
	}
	if _, err := c.setVolumePhaseMessage(ctx, pv, corev1.VolumeFailed, message); err != nil {
		return err
	}
	c.recorder.Event(pv, corev1.EventTypeWarning, reason, message)
	return nil
}

// unbindVolume frees a volume whose claim is bound to another one: a
// binding the controller made is undone; a user's pre-binding is kept
// (only the claim UID is cleared).
func (c *Controller) unbindVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	updated := pv.DeepCopy()
	if metav1.HasAnnotation(pv.ObjectMeta, volume.AnnBoundByController) {
		updated.Spec.ClaimRef = nil
		delete(updated.Annotations, volume.AnnBoundByController)
	} else {
		updated.Spec.ClaimRef.UID = ""
	}
	saved, err := c.client.CoreV1().PersistentVolumes().Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	_, err = c.setVolumePhase(ctx, saved, corev1.VolumeAvailable)
	return err
}
