package localpath

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/volume"

	"orch/internal/localpath"
)

// expand grows a bound claim's local-path volume to what the claim asks
// for (the apiserver lets a claim grow only when its class allows
// expansion), then the claim's status. The agent of the volume's node raises
// its directory's project quota where the filesystem has one (internal/localpath).
func (c *Controller) expand(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pv, err := c.pvs.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[volume.AnnDynamicallyProvisioned] != localpath.Provisioner || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
		return nil
	}
	want, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	if have := pv.Spec.Capacity[corev1.ResourceStorage]; want.Cmp(have) > 0 {
		c.recorder.Eventf(claim, corev1.EventTypeNormal, "Resizing", "External resizer is resizing volume %s", pv.Name)
		grown := pv.DeepCopy()
		grown.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := c.client.CoreV1().PersistentVolumes().Update(ctx, grown, metav1.UpdateOptions{}); err != nil {
			c.recorder.Eventf(claim, corev1.EventTypeWarning, "VolumeResizeFailed", "resize volume %q failed: %v", pv.Name, err)
			return fmt.Errorf("grow volume %q: %w", pv.Name, err)
		}
		c.log.Info("expanded a volume", "claim", claim.Namespace+"/"+claim.Name, "volume", pv.Name, "size", want.String())
	}
	if !statusBehind(claim, want) {
		return nil
	}
	updated := claim.DeepCopy()
	expanded(updated, want)
	if _, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("record the new size of claim %q: %w", claim.Namespace+"/"+claim.Name, err)
	}
	c.recorder.Eventf(claim, corev1.EventTypeNormal, "VolumeResizeSuccessful", "resize volume %q by resizer %q finished successfully", pv.Name, localpath.Provisioner)
	return nil
}

// statusBehind is true while a bound claim's status says less than its
// volume now has (want), or still says it is resizing.
func statusBehind(claim *corev1.PersistentVolumeClaim, want resource.Quantity) bool {
	if claim.Status.Phase != corev1.ClaimBound {
		return false // the binder writes the first status
	}
	have, ok := claim.Status.Capacity[corev1.ResourceStorage]
	if !ok || have.Cmp(want) < 0 {
		return true
	}
	for _, cond := range claim.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimResizing || cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending {
			return true
		}
	}
	_, resizing := claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	return resizing
}

// expanded writes a finished expansion to want into claim's status.
func expanded(claim *corev1.PersistentVolumeClaim, want resource.Quantity) {
	if claim.Status.Capacity == nil {
		claim.Status.Capacity = corev1.ResourceList{}
	}
	claim.Status.Capacity[corev1.ResourceStorage] = want
	if claim.Status.AllocatedResources == nil {
		claim.Status.AllocatedResources = corev1.ResourceList{}
	}
	claim.Status.AllocatedResources[corev1.ResourceStorage] = want
	delete(claim.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(claim.Status.AllocatedResourceStatuses) == 0 {
		claim.Status.AllocatedResourceStatuses = nil
	}
	var conds []corev1.PersistentVolumeClaimCondition
	for _, cond := range claim.Status.Conditions {
		if cond.Type != corev1.PersistentVolumeClaimResizing && cond.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			conds = append(conds, cond)
		}
	}
	claim.Status.Conditions = conds
}
