package replicaset

import (
	"context"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"orch/internal/controller"
)

// calculateStatus counts rs's pods into a new status. manageErr, the error
// of the last resize, sets or clears the ReplicaFailure condition.
func calculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, withTerminating bool, now time.Time) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	templateLabels := labels.SelectorFromSet(rs.Spec.Template.Labels)
	var fullyLabeled, ready, available int32
	for _, p := range active {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fullyLabeled++
		}
		if controller.PodReady(p) {
			ready++
			if controller.PodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failure := replicaFailure(status)
	switch {
	case manageErr != nil && failure == nil:
		reason := ""
		if diff := len(active) - int(*rs.Spec.Replicas); diff < 0 {
			reason = reasonFailedCreate
		} else if diff > 0 {
			reason = reasonFailedDelete
		}
		status.Conditions = append(status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		var kept []appsv1.ReplicaSetCondition
		for _, c := range status.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				kept = append(kept, c)
			}
		}
		status.Conditions = kept
	}
	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = nil
	if withTerminating {
		n := int32(len(terminating))
		status.TerminatingReplicas = &n
	}
	return status
}

func replicaFailure(status appsv1.ReplicaSetStatus) *appsv1.ReplicaSetCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure {
			return &status.Conditions[i]
		}
	}
	return nil
}

// updateStatus writes status unless nothing changed and the generation was
// already observed; a conflicting write is retried once on a fresh read.
func (m *manager) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	cur := rs.Status
	if cur.Replicas == status.Replicas &&
		cur.FullyLabeledReplicas == status.FullyLabeledReplicas &&
		cur.ReadyReplicas == status.ReadyReplicas &&
		cur.AvailableReplicas == status.AvailableReplicas &&
		equalInt32Ptr(cur.TerminatingReplicas, status.TerminatingReplicas) &&
		rs.Generation == cur.ObservedGeneration &&
		reflect.DeepEqual(cur.Conditions, status.Conditions) {
		return rs, nil
	}
	// The generation acted upon, not whatever it is by the time of a retry.
	status.ObservedGeneration = rs.Generation
	var lastErr error
	for i := 0; ; i++ {
		m.log.Debug("updating status", "owner", controller.Key(rs),
			"replicas", status.Replicas, "want", *rs.Spec.Replicas, "fullyLabeled", status.FullyLabeledReplicas,
			"ready", status.ReadyReplicas, "available", status.AvailableReplicas, "observedGeneration", status.ObservedGeneration)
		rs.Status = status
		updated, err := m.kind.updateStatus(ctx, rs)
		if err == nil {
			return updated, nil
		}
		lastErr = err
		if i >= statusUpdateRetries {
			return nil, lastErr
		}
		fresh, err := m.kind.fresh(ctx, rs.Namespace, rs.Name)
		if err != nil {
			return nil, err
		}
		rs = fresh
	}
}

func equalInt32Ptr(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
