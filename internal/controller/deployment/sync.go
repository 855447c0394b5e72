package deployment

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"orch/internal/controller"
)

// sync reconciles the Deployment with key.
func (c *Controller) sync(ctx context.Context, key string) error {
	cached, err := controller.Lookup(key, c.dLister.Deployments)
	if cached == nil || err != nil {
		return err // nil when deleted: the garbage collector removes its ReplicaSets
	}
	d := cached.DeepCopy()

	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		c.recorder.Eventf(d, corev1.EventTypeWarning, reasonSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_ = c.writeStatus(ctx, d)
		}
		return nil
	}

	rsList, err := c.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
	}
	if err := c.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.scaleAndSync(ctx, d, rsList)
	}
	// A rollback rewrites the template; nothing is scaled until it is done.
	if rollbackTo(d) != nil {
		return c.rollback(ctx, d, rsList)
	}
	scaling, err := c.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return c.scaleAndSync(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		pods, err := c.podsByReplicaSet(rsList)
		if err != nil {
			return err
		}
		return c.rolloutRecreate(ctx, d, rsList, pods)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return c.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}

// scaleAndSync handles a change of spec.replicas (or a paused Deployment):
// resize the ReplicaSets without moving the rollout along, clean up old
// ones while paused, and write status.
func (c *Controller) scaleAndSync(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused && rollbackTo(d) == nil {
		if err := c.cleanup(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition, so time spent paused never counts against the progress
// deadline.
func (c *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == reasonTimedOut {
		return nil // a timeout stays reported
	}
	paused := cond != nil && cond.Reason == reasonPaused
	now := c.clock.Now()
	switch {
	case d.Spec.Paused && !paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonPaused, "Deployment is paused", now))
	case !d.Spec.Paused && paused:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, reasonResumed, "Deployment is resumed", now))
	default:
		return nil
	}
	return c.writeStatus(ctx, d)
}

// isScalingEvent: some active ReplicaSet recorded a desired-replicas other
// than spec.replicas, so spec.replicas changed since the last rollout step.
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := c.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeReplicaSets(append(oldRSs, newRS)) {
		if desired, ok := int32Annotation(rs, desiredReplicasAnnotation); ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// claimReplicaSets returns the ReplicaSets d controls after adopting the
// orphans its selector matches and releasing those it no longer does
// (controller.Claim).
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has invalid label selector: %v", d.Namespace, d.Name, err)
	}
	return controller.Claim[*appsv1.ReplicaSet]{
		Owner:   d,
		Matches: func(rs *appsv1.ReplicaSet) bool { return selector.Matches(labels.Set(rs.Labels)) },
		Recheck: func() error {
			fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			return controller.RecheckOwner("Deployment", d, fresh, err)
		},
		Adopt: func(rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			if err := c.patchReplicaSet(ctx, rs, controller.AdoptPatch(*metav1.NewControllerRef(d, controllerKind), rs.UID, nil)); err != nil {
				return nil, err
			}
			c.log.Info("adopted replica set", "deployment", controller.Key(d), "replicaSet", rs.Name)
			return rs, nil
		},
		Release: func(rs *appsv1.ReplicaSet) error {
			return c.patchReplicaSet(ctx, rs, controller.ReleasePatch(d.UID, rs.UID, nil))
		},
	}.Run(all)
}

func (c *Controller) patchReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, patch []byte) error {
	_, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// podsByReplicaSet groups the pods each ReplicaSet controls.
func (c *Controller) podsByReplicaSet(rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	out := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		ref := &metav1.OwnerReference{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}
		objs, err := c.podIndexer.ByIndex(podOwnerIndex, ownerIndexKey(rs.Namespace, ref))
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if pod, ok := obj.(*corev1.Pod); ok {
				out[rs.UID] = append(out[rs.UID], pod)
			}
		}
	}
	return out, nil
}
