package deployment

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"

	"orch/internal/controller"
)

// rolloutRolling moves a RollingUpdate one step: scale the new ReplicaSet
// up as far as maxSurge allows or, failing that, the old ones down as far
// as maxUnavailable allows; once complete, clean up old ReplicaSets.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(oldRSs, newRS)
	scaledUp, err := c.reconcileNewReplicaSet(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	scaledDown, err := c.reconcileOldReplicaSets(ctx, all, activeReplicaSets(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

func (c *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	want := *d.Spec.Replicas
	switch {
	case *newRS.Spec.Replicas == want:
		return false, nil
	case *newRS.Spec.Replicas > want:
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, want, d, false)
		return scaled, err
	}
	size, err := newRSNewReplicas(d, all, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, size, d, false)
	return scaled, err
}

// reconcileOldReplicaSets scales old ReplicaSets down by at most
// total - minAvailable - (unavailable pods of the new ReplicaSet): first
// their unavailable pods, which costs no availability, then available ones
// while more than minAvailable pods are available.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, all, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if specReplicas(oldRSs) == 0 {
		return false, nil
	}
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	maxScaledDown := specReplicas(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	oldRSs, cleaned, err := c.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxScaledDown)
	if err != nil {
		return false, nil
	}
	scaledDown, err := c.scaleDownOldForRollingUpdate(ctx, append(oldRSs, newRS), oldRSs, d)
	if err != nil {
		return false, nil
	}
	return cleaned+scaledDown > 0, nil
}

// cleanupUnhealthyReplicas scales old ReplicaSets down by their unavailable
// replicas (oldest ReplicaSet first), at most limit in all. The replicaset
// controller deletes unready pods first, so this removes those.
func (c *Controller) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, limit int32) ([]*appsv1.ReplicaSet, int32, error) {
	sort.Sort(byCreation(oldRSs))
	total := int32(0)
	for i, rs := range oldRSs {
		if total >= limit {
			break
		}
		if *rs.Spec.Replicas == 0 || *rs.Spec.Replicas == rs.Status.AvailableReplicas {
			continue
		}
		down := min(limit-total, *rs.Spec.Replicas-rs.Status.AvailableReplicas)
		size := *rs.Spec.Replicas - down
		if size > *rs.Spec.Replicas {
			return nil, 0, fmt.Errorf("when cleaning up unhealthy replicas, got invalid request to scale down %s %d -> %d", controller.Key(rs), *rs.Spec.Replicas, size)
		}
		_, updated, err := c.scaleReplicaSet(ctx, rs, size, d, false)
		if err != nil {
			return nil, total, err
		}
		total += down
		oldRSs[i] = updated
	}
	return oldRSs, total, nil
}

// scaleDownOldForRollingUpdate scales old ReplicaSets down (oldest first)
// by as many pods as are available beyond minAvailable.
func (c *Controller) scaleDownOldForRollingUpdate(ctx context.Context, all, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := sumStatus(all, statusAvailable)
	if available <= minAvailable {
		return 0, nil
	}
	sort.Sort(byCreation(oldRSs))
	budget := available - minAvailable
	total := int32(0)
	for _, rs := range oldRSs {
		if total >= budget {
			break
		}
		if *rs.Spec.Replicas == 0 {
			continue
		}
		down := min(*rs.Spec.Replicas, budget-total)
		if _, _, err := c.scaleReplicaSet(ctx, rs, *rs.Spec.Replicas-down, d, false); err != nil {
			return total, err
		}
		total += down
	}
	return total, nil
}
