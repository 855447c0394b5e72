package statefulset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/util/retry"

	"orch/internal/controller"
)

// recordPodEvent records the outcome of verb ("create", "update",
// "delete") on pod with upstream's reasons and messages, e.g.
// SuccessfulCreate "create Pod web-0 in StatefulSet web successful".
func (c *Controller) recordPodEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, err error) {
	if err == nil {
		c.recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+title(verb),
			"%s Pod %s in StatefulSet %s successful", title(verb), pod.Name, set.Name)
		return
	}
	c.recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+title(verb),
		"%s Pod %s in StatefulSet %s failed error: %s", title(verb), pod.Name, set.Name, err)
}

// recordClaimEvent records the outcome of creating claim for pod.
func (c *Controller) recordClaimEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, err error) {
	if err == nil {
		c.recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+title(verb),
			"%s Claim %s Pod %s in StatefulSet %s success", title(verb), claim.Name, pod.Name, set.Name)
		return
	}
	c.recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+title(verb),
		"%s Claim %s for Pod %s in StatefulSet %s failed error: %s", title(verb), claim.Name, pod.Name, set.Name, err)
}

// title upper-cases the first letter of an ASCII verb.
func title(verb string) string {
	if verb == "" || verb[0] < 'a' || verb[0] > 'z' {
		return verb
	}
	return string(verb[0]-'a'+'A') + verb[1:]
}

// createPod creates pod's missing claims, then pod, then sets the
// claims' owners for the retention policy.
func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if err := c.createClaims(ctx, set, pod); err != nil {
		c.recordPodEvent("create", set, pod, err)
		return err
	}
	created, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return err
	}
	if err == nil {
		c.writes.wrote(controller.Key(set), set.UID, resPods, created.ResourceVersion)
		c.log.Debug("created pod", "statefulset", controller.Key(set), "pod", pod.Name)
		if err := c.fixClaimOwners(ctx, set, created); err != nil {
			c.recordPodEvent("update", set, pod, err)
			return err
		}
	}
	c.recordPodEvent("create", set, pod, err)
	return err
}

// updatePod gives an existing pod its identity and storage back and fixes
// its claims' owners, retrying write conflicts on a fresh copy.
func (c *Controller) updatePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	pod = pod.DeepCopy()
	attempted := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		changed := false
		if !identityMatches(set, pod) {
			updateIdentity(set, pod)
			changed = true
		}
		if !storageMatches(set, pod) {
			updateStorage(set, pod)
			changed = true
			if err := c.createClaims(ctx, set, pod); err != nil {
				c.recordPodEvent("update", set, pod, err)
				return err
			}
		}
		if ok, err := c.claimOwnersMatch(set, pod); err != nil || !ok {
			if err == nil {
				err = c.fixClaimOwners(ctx, set, pod)
			}
			if err != nil {
				c.recordPodEvent("update", set, pod, err)
				return err
			}
		}
		if !changed {
			return nil
		}
		attempted = true
		updated, err := c.client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
		if err == nil {
			c.writes.wrote(controller.Key(set), set.UID, resPods, updated.ResourceVersion)
			return nil
		}
		if fresh, getErr := c.pods.Pods(pod.Namespace).Get(pod.Name); getErr == nil {
			pod = fresh.DeepCopy()
		}
		return err
	})
	if attempted {
		c.recordPodEvent("update", set, pod, err)
	}
	return err
}

// deletePod deletes pod; a pod already gone counts as deleted.
func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		c.recordPodEvent("delete", set, pod, err)
		return err
	}
	c.log.Debug("deleted pod", "statefulset", controller.Key(set), "pod", pod.Name)
	c.recordPodEvent("delete", set, pod, nil)
	return nil
}

// createClaims creates the claims pod needs that do not exist yet. A claim
// being deleted is an error: the pod must wait for it to go.
func (c *Controller) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	var errs []error
	claims := claimsFor(set, pod)
	for _, t := range set.Spec.VolumeClaimTemplates {
		claim := claims[t.Name]
		existing, err := c.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		switch {
		case apierrors.IsNotFound(err):
			created, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, &claim, metav1.CreateOptions{})
			if err == nil {
				c.writes.wrote(controller.Key(set), set.UID, resClaims, created.ResourceVersion)
			} else {
				errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", claim.Name, err))
			}
			if err == nil || !apierrors.IsAlreadyExists(err) {
				c.recordClaimEvent("create", set, pod, &claim, err)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("failed to retrieve PVC %s: %w", claim.Name, err))
			c.recordClaimEvent("create", set, pod, &claim, err)
		case existing.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("pvc %s is being deleted; the pod waits until it is gone", claim.Name))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// claimOwnersMatch reports whether pod's existing claims have the owners
// the retention policy wants. Missing claims are picked up later.
func (c *Controller) claimOwnersMatch(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	for _, claim := range claimsFor(set, pod) {
		existing, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(claim.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("could not read claim %s of %s to check its retention policy: %w", claim.Name, pod.Name, err)
		}
		if !claimOwnersUpToDate(existing, set, pod) {
			return false, nil
		}
	}
	return true, nil
}

// fixClaimOwners writes the owners the retention policy wants on pod's
// existing claims.
func (c *Controller) fixClaimOwners(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	for _, claim := range claimsFor(set, pod) {
		existing, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(claim.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("could not read claim %s of %s to apply the retention policy: %w", claim.Name, pod.Name, err)
		}
		if hasOtherController(existing, set, pod) {
			c.recorder.Eventf(set, corev1.EventTypeWarning, "ConflictingController",
				"PersistentVolumeClaim %s has a conflicting OwnerReference that acts as a managing controller, the retention policy is ignored for this claim", claim.Name)
		}
		if claimOwnersUpToDate(existing, set, pod) {
			continue
		}
		fixed := existing.DeepCopy()
		setClaimOwners(fixed, set, pod)
		updated, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Update(ctx, fixed, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("could not update the ownerReferences of claim %s for the retention policy: %w", claim.Name, err)
		}
		c.writes.wrote(controller.Key(set), set.UID, resClaims, updated.ResourceVersion)
	}
	return nil
}

// claimIsStale reports whether one of pod's claims still belongs to an
// earlier pod of the same name (whenScaled=Delete): the garbage collector
// is about to delete it, so the pod must not be created on it yet.
func (c *Controller) claimIsStale(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	if retentionPolicy(set).WhenScaled == retain {
		return false, nil
	}
	for _, claim := range claimsFor(set, pod) {
		existing, err := c.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		if hasStaleOwner(existing, pod, podKind) {
			return true, nil
		}
	}
	return false, nil
}
