package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rollback serves the deprecated rollback annotation (what the removed
// extensions/v1beta1 rollback subresource set): copy the template of the
// ReplicaSet with the asked revision (0: the previous one) into the
// Deployment, then clear the annotation. kubectl rollout undo does not use
// this; it patches the template itself.
func (c *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(oldRSs, newRS)
	to := *rollbackTo(d)
	if to == 0 {
		if to = lastRevision(all); to == 0 {
			c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackNotFound, "Unable to find last revision.")
			return c.clearRollbackTo(ctx, d)
		}
	}
	for _, rs := range all {
		if v, err := revision(rs); err != nil || v != to {
			continue
		}
		if equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackUnchanged, "The rollback revision contains the same template as current deployment %q", d.Name)
			return c.clearRollbackTo(ctx, d)
		}
		d.Spec.Template.ObjectMeta = *rs.Spec.Template.ObjectMeta.DeepCopy()
		d.Spec.Template.Spec = *rs.Spec.Template.Spec.DeepCopy()
		delete(d.Spec.Template.Labels, podTemplateHashLabel)
		// The Deployment takes the annotations of the revision it returns
		// to, or they would be copied onto that ReplicaSet as if new.
		setAnnotationsFromReplicaSet(d, rs)
		if err := c.clearRollbackTo(ctx, d); err != nil {
			return err
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, reasonRollbackDone, "Rolled back deployment %q to revision %d", d.Name, to)
		return nil
	}
	c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackNotFound, "Unable to find the revision to rollback to.")
	return c.clearRollbackTo(ctx, d)
}

func (c *Controller) clearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, rollbackToAnnotation)
	_, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("clearing the rollback annotation: %w", err)
	}
	return nil
}
