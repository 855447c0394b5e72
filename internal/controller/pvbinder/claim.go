package pvbinder

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/volume"
)

// annDefaultClass marks the default StorageClass.
const annDefaultClass = "storageclass.kubernetes.io/is-default-class"

func (c *Controller) syncClaimByKey(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBindCompleted) {
		return c.syncBoundClaim(ctx, claim)
	}
	if claim.Spec.VolumeName != "" {
		return c.syncRequestedVolume(ctx, claim)
	}
	return c.syncUnboundClaim(ctx, claim)
}

// syncUnboundClaim binds a claim that asked for no particular volume.
func (c *Controller) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	waitForConsumer, err := volume.IsDelayBindingMode(claim, c.classes)
	if err != nil {
		return err
	}
	pvs, err := c.pvs.List(labels.Everything())
	if err != nil {
		return err
	}
	pv, err := bestVolume(claim, pvs, waitForConsumer)
	if err != nil {
		return err
	}
	if pv != nil {
		return c.bind(ctx, pv, claim)
	}
	if assigned, err := c.assignDefaultClass(ctx, claim); err != nil || assigned {
		return err
	}
	class := volume.GetPersistentVolumeClaimClass(claim)
	switch {
	case waitForConsumer && !volume.IsDelayBindingProvisioning(claim):
		c.recordWaiting(claim)
	case class != "":
		return c.leaveToProvisioner(ctx, claim, class)
	default:
		c.recorder.Event(claim, corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
	}
	return c.setClaimStatus(ctx, claim, corev1.ClaimPending, nil)
}

// recordWaiting explains why a WaitForFirstConsumer claim is not bound.
func (c *Controller) recordWaiting(claim *corev1.PersistentVolumeClaim) {
	pods := c.unscheduledPodsUsing(claim)
	switch len(pods) {
	case 0:
		c.recorder.Event(claim, corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
	case 1:
		c.recorder.Event(claim, corev1.EventTypeNormal, "WaitForPodScheduled", fmt.Sprintf("waiting for pod %s to be scheduled", pods[0]))
	default:
		c.recorder.Event(claim, corev1.EventTypeNormal, "WaitForPodScheduled", fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(pods, ",")))
	}
}

// unscheduledPodsUsing names the pods of the claim's namespace that mount it
// and have no node yet.
func (c *Controller) unscheduledPodsUsing(claim *corev1.PersistentVolumeClaim) []string {
	pods, _ := c.pods.Pods(claim.Namespace).List(labels.Everything())
	var names []string
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
				names = append(names, pod.Name)
				break
			}
		}
	}
	sort.Strings(names)
	return names
}

// leaveToProvisioner hands a claim no volume fits to its class's external
// provisioner (the binder provisions nothing itself; orch's own local-path
// provisioner, internal/controller/localpath, is one such).
func (c *Controller) leaveToProvisioner(ctx context.Context, claim *corev1.PersistentVolumeClaim, className string) error {
	class, err := c.classes.Get(className)
	if err != nil {
		c.recorder.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", err.Error())
		return c.setClaimStatus(ctx, claim, corev1.ClaimPending, nil)
	}
	if strings.HasPrefix(class.Provisioner, "kubernetes.io/") {
		c.recorder.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", "no volume plugin matched name: "+class.Provisioner)
		return c.setClaimStatus(ctx, claim, corev1.ClaimPending, nil)
	}
	if claim.Annotations[volume.AnnStorageProvisioner] != class.Provisioner {
		updated := claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, volume.AnnBetaStorageProvisioner, class.Provisioner)
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, volume.AnnStorageProvisioner, class.Provisioner)
		if _, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			c.recorder.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("Error saving claim: %v", err))
			return err
		}
	}
	c.recorder.Event(claim, corev1.EventTypeNormal, "ExternalProvisioning", fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' "+
		"or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner))
	return nil
}

// assignDefaultClass gives a claim without a class the default StorageClass
// (the newest one when several are marked), as upstream does retroactively.
func (c *Controller) assignDefaultClass(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, error) {
	if volume.PersistentVolumeClaimHasClass(claim) {
		return false, nil
	}
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return false, err
	}
	var def *storagev1.StorageClass
	for _, sc := range classes {
		if sc.Annotations[annDefaultClass] == "true" && (def == nil || sc.CreationTimestamp.After(def.CreationTimestamp.Time)) {
			def = sc
		}
	}
	if def == nil {
		return false, nil
	}
	updated := claim.DeepCopy()
	updated.Spec.StorageClassName = &def.Name
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	return err == nil, err
}

// syncRequestedVolume binds a claim to the volume its spec.volumeName names.
func (c *Controller) syncRequestedVolume(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pv, err := c.pvs.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return c.setClaimStatus(ctx, claim, corev1.ClaimPending, nil)
	}
	if err != nil {
		return err
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		if reason := unfitReason(pv, claim); reason != "" {
			c.recorder.Event(claim, corev1.EventTypeWarning, "VolumeMismatch", fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, reason))
			return c.setClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		}
		return c.bind(ctx, pv, claim)
	case volume.IsVolumeBoundToClaim(pv, claim):
		return c.bind(ctx, pv, claim)
	}
	c.recorder.Event(claim, corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("volume %q already bound to a different claim.", pv.Name))
	if metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBoundByController) {
		return fmt.Errorf("invalid binding of claim %s/%s to volume %q: volume already claimed by %s/%s",
			claim.Namespace, claim.Name, pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	}
	return c.setClaimStatus(ctx, claim, corev1.ClaimPending, nil)
}

// syncBoundClaim keeps a claim that was bound bound, or marks it Lost.
func (c *Controller) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName == "" {
		return c.loseClaim(ctx, claim, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	}
	pv, err := c.pvs.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return c.loseClaim(ctx, claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	}
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == claim.UID {
		return c.bind(ctx, pv, claim)
	}
	return c.loseClaim(ctx, claim, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly")
}

// loseClaim sets the terminal Lost phase, with a warning the first time.
func (c *Controller) loseClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, reason, message string) error {
	if claim.Status.Phase == corev1.ClaimLost {
		return nil
	}
	if err := c.setClaimStatus(ctx, claim, corev1.ClaimLost, nil); err != nil {
		return err
	}
	c.recorder.Event(claim, corev1.EventTypeWarning, reason, message)
	return nil
}
