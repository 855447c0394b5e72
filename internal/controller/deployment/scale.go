package deployment

import (
	"context"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller"
)

// scale resizes the ReplicaSets after spec.replicas changed (or while
// paused) without advancing the rollout: a single active ReplicaSet takes
// the whole count; a saturated new ReplicaSet leaves the old ones at zero;
// otherwise, for a rolling update, the difference is shared out in
// proportion to the ReplicaSets' sizes, larger ones first, leftovers to the
// largest.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, oldRSs); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, _, err := c.scaleReplicaSet(ctx, rs, *d.Spec.Replicas, d, false)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range activeReplicaSets(oldRSs) {
			if _, _, err := c.scaleReplicaSet(ctx, old, 0, d, false); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	all := activeReplicaSets(append(oldRSs, newRS))
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - specReplicas(all)
	switch {
	case toAdd > 0:
		sort.Sort(bySizeNewer(all))
	case toAdd < 0:
		sort.Sort(bySizeOlder(all))
	}
	added := int32(0)
	sizes := make(map[string]int32, len(all))
	for _, rs := range all {
		if toAdd == 0 {
			sizes[rs.Name] = *rs.Spec.Replicas
			continue
		}
		p := proportion(rs, d, toAdd, added)
		sizes[rs.Name] = *rs.Spec.Replicas + p
		added += p
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			sizes[rs.Name] = max(sizes[rs.Name]+toAdd-added, 0)
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[rs.Name], d, true); err != nil {
			return err
		}
	}
	return nil
}

// scaleReplicaSet sets rs's replicas to size and its desired-replicas and
// max-replicas annotations to d's. Without force it does nothing when the
// size is already right. It records a ScalingReplicaSet event when the
// size changes.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment, force bool) (bool, *appsv1.ReplicaSet, error) {
	if !force && *rs.Spec.Replicas == size {
		return false, rs, nil
	}
	most := *d.Spec.Replicas + maxSurge(d)
	resize := *rs.Spec.Replicas != size
	if !resize && !replicasAnnotationsNeedUpdate(rs, *d.Spec.Replicas, most) {
		return false, rs, nil
	}
	from := *rs.Spec.Replicas
	cp := rs.DeepCopy()
	*cp.Spec.Replicas = size
	setReplicasAnnotations(cp, *d.Spec.Replicas, most)
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, nil, err
	}
	if !resize {
		return false, updated, nil
	}
	direction := "up"
	if size < from {
		direction = "down"
	}
	c.recorder.Eventf(d, corev1.EventTypeNormal, reasonScaling, "Scaled %s replica set %s from %d to %d", direction, updated.Name, from, size)
	return true, updated, nil
}

// cleanup deletes the oldest old ReplicaSets beyond revisionHistoryLimit,
// only those scaled to zero and settled.
func (c *Controller) cleanup(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	surplus := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if surplus <= 0 {
		return nil
	}
	sort.Sort(byRevision(alive))
	for _, rs := range alive[:surplus] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		c.log.Info("deleting old replica set beyond revisionHistoryLimit", "deployment", controller.Key(d), "replicaSet", rs.Name)
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
