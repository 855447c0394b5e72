package statefulset

import (
	"context"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"orch/internal/controller"
)

// countPods sets the replica counts of r.status from the replicas and the
// condemned pods.
func (r *round) countPods() {
	s := &r.status
	s.Replicas, s.ReadyReplicas, s.AvailableReplicas, s.CurrentReplicas, s.UpdatedReplicas = 0, 0, 0, 0, 0
	for _, list := range [][]*corev1.Pod{r.replicas, r.condemned} {
		for _, p := range list {
			countPod(s, p, r.set.Spec.MinReadySeconds, r.current.Name, r.update.Name, r.now)
		}
	}
}

// countPod adds pod to the counts of status: replicas (created pods),
// readyReplicas (running and ready), availableReplicas (ready for
// minReadySeconds), and, of the pods not terminating, currentReplicas and
// updatedReplicas by their revision label.
func countPod(s *appsv1.StatefulSetStatus, pod *corev1.Pod, minReadySeconds int32, current, update string, now time.Time) {
	if !isCreated(pod) {
		return
	}
	s.Replicas++
	if isRunningAndReady(pod) {
		s.ReadyReplicas++
		if controller.PodAvailable(pod, minReadySeconds, now) {
			s.AvailableReplicas++
		}
	}
	if isTerminating(pod) {
		return
	}
	if rev := revisionOf(pod); rev == current {
		s.CurrentReplicas++
	}
	if revisionOf(pod) == update {
		s.UpdatedReplicas++
	}
}

// completeUpdate makes the update revision current once every replica
// runs it and is ready.
func completeUpdate(set *appsv1.StatefulSet, s *appsv1.StatefulSetStatus) {
	n := int32(replicasOf(set))
	if s.UpdatedReplicas == n && s.ReadyReplicas == n && s.Replicas == n {
		s.CurrentReplicas = s.UpdatedReplicas
		s.CurrentRevision = s.UpdateRevision
	}
}

// statusChanged reports whether s differs from what set records.
func statusChanged(set *appsv1.StatefulSet, s *appsv1.StatefulSetStatus) bool {
	cur := &set.Status
	return s.ObservedGeneration > cur.ObservedGeneration ||
		s.Replicas != cur.Replicas ||
		s.CurrentReplicas != cur.CurrentReplicas ||
		s.ReadyReplicas != cur.ReadyReplicas ||
		s.UpdatedReplicas != cur.UpdatedReplicas ||
		s.AvailableReplicas != cur.AvailableReplicas ||
		s.CurrentRevision != cur.CurrentRevision ||
		s.UpdateRevision != cur.UpdateRevision ||
		!equalInt32Ptr(s.CollisionCount, cur.CollisionCount) ||
		!reflect.DeepEqual(cur.Conditions, s.Conditions)
}

// writeStatus completes a finished update and writes s if it changed,
// retrying conflicts on a fresh read of the set.
func (c *Controller) writeStatus(ctx context.Context, set *appsv1.StatefulSet, s *appsv1.StatefulSetStatus) error {
	completeUpdate(set, s)
	if !statusChanged(set, s) {
		return nil
	}
	set = set.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set.Status = *s
		updated, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
		if err == nil {
			c.writes.wrote(controller.Key(set), set.UID, resStatefulSets, updated.ResourceVersion)
			c.log.Debug("updated status", "statefulset", controller.Key(set), "replicas", s.Replicas, "ready", s.ReadyReplicas,
				"current", s.CurrentReplicas, "updated", s.UpdatedReplicas, "currentRevision", s.CurrentRevision, "updateRevision", s.UpdateRevision)
			return nil
		}
		fresh, getErr := c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if fresh.UID != set.UID {
			return nil // deleted and recreated: nothing of ours to write
		}
		set = fresh
		return err
	})
}

func equalInt32Ptr(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
