package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"orch/internal/controller"
)

// syncRolloutStatus writes status during a rollout and keeps the
// Progressing condition: NewReplicaSetAvailable once complete,
// ReplicaSetUpdated whenever it moved forward, ProgressDeadlineExceeded
// when it has not for progressDeadlineSeconds. A ReplicaFailure of a
// ReplicaSet (the new one first) is copied onto the Deployment.
func (c *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := c.calculateStatus(all, newRS, d)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	now := c.clock.Now()
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	done := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == reasonNewRSAvailable
	if hasProgressDeadline(d) && !done {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case deploymentComplete(d, &st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonNewRSAvailable, subject+" has successfully progressed.", now))
		case deploymentProgressing(d, &st):
			// Progress refreshes lastUpdateTime even when the reason stays
			// the same; lastTransitionTime stays while the status is true.
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reasonRSUpdated, subject+" is progressing.", now)
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, cond)
		case deploymentTimedOut(d, &st, now):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, reasonTimedOut, subject+" has timed out progressing.", now))
		}
	}
	if failure := replicaFailure(all, newRS); failure != nil {
		setCondition(&st, *failure)
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	if reflect.DeepEqual(d.Status, st) {
		c.requeueStuck(d, st)
		return nil
	}
	d.Status = st
	return c.writeStatus(ctx, d)
}

// replicaFailure returns the ReplicaFailure condition of the new
// ReplicaSet, else of the first old one that has one.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	find := func(rs *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
		if rs == nil {
			return nil
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				dc := fromReplicaSetCondition(c)
				return &dc
			}
		}
		return nil
	}
	if c := find(newRS); c != nil {
		return c
	}
	for _, rs := range all {
		if c := find(rs); c != nil {
			return c
		}
	}
	return nil
}

// requeueStuck schedules a progress check for when the deadline of a
// rollout that shows no progress would pass. It returns the delay, or -1
// when no check is needed.
func (c *Controller) requeueStuck(d *appsv1.Deployment, st appsv1.DeploymentStatus) time.Duration {
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil {
		return -1
	}
	if deploymentComplete(d, &st) || cur.Reason == reasonTimedOut {
		return -1
	}
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(c.clock.Now())
	if after < time.Second {
		c.queue.AddRateLimited(controller.Key(d))
		return 0
	}
	// A second more absorbs the truncation of lastUpdateTime to seconds.
	c.delay.After(controller.Key(d), after+time.Second)
	return after
}
