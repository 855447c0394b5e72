package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller"
)

// replicaSetsAndSyncRevision splits rsList into the new ReplicaSet and the
// old ones, bringing the revision annotations of the new one and of d up
// to date. With create, a missing new ReplicaSet is created.
func (c *Controller) replicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	oldRSs := findOldReplicaSets(d, rsList)
	newRS, err := c.newReplicaSet(ctx, d, rsList, oldRSs, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

// newReplicaSet returns the ReplicaSet running d's template, with revision
// max(old revisions)+1, creating it (named "<d>-<hash>") if create is set.
// It returns nil if there is none and create is not set.
func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	existing := findNewReplicaSet(d, rsList)
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)
	now := c.clock.Now()

	if existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(c.log, d, rs, newRevision, true)
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
		}
		// The Deployment takes the revision the ReplicaSet already has.
		needsUpdate := setDeploymentRevision(d, rs.Annotations[revisionAnnotation])
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			msg := fmt.Sprintf("Found new replica set %q", rs.Name)
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonFoundNewRS, msg, now))
			needsUpdate = true
		}
		if needsUpdate {
			if err := c.writeStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := templateHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, podTemplateHashLabel, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[podTemplateHashLabel] = hash
	replicas := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            replicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &replicas,
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	n, err := newRSNewReplicas(d, append(oldRSs, rs), rs)
	if err != nil {
		return nil, err
	}
	*rs.Spec.Replicas = n
	setNewReplicaSetAnnotations(c.log, d, rs, newRevision, false)

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		// Our own earlier create that the cache has not shown yet, or a
		// hash collision with a ReplicaSet that runs another template.
		alreadyExists = true
		found, getErr := c.rsLister.ReplicaSets(rs.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOfNoCopy(found); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &found.Spec.Template) {
			created, err = found, nil
			break
		}
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if c.writeStatus(ctx, d) == nil {
			c.log.Info("hash collision; bumped collisionCount", "deployment", controller.Key(d), "collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonFailedRSCreate, msg, now))
			_ = c.writeStatus(ctx, d) // the create failure is the news
		}
		c.recorder.Eventf(d, corev1.EventTypeWarning, reasonFailedRSCreate, "%s", msg)
		return nil, err
	}
	if !alreadyExists && n > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, reasonScaling, "Scaled up replica set %s from 0 to %d", created.Name, n)
	}
	needsUpdate := setDeploymentRevision(d, newRevision)
	if !alreadyExists && hasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", created.Name)
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSCreated, msg, now))
		needsUpdate = true
	}
	if needsUpdate {
		err = c.writeStatus(ctx, d)
	}
	return created, err
}

// withLabel returns a copy of m with k=v.
func withLabel(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}
