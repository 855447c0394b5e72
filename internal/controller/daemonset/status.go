package daemonset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller"
)

// counts are the status numbers of a DaemonSet.
type counts struct {
	desired, current, misscheduled, ready, updated, available int32
}

// countPods computes the status numbers: per node that should run a pod,
// its oldest daemon pod is counted (ready, available, updated); pods on
// nodes that should not run one are misscheduled.
func countPods(ds *appsv1.DaemonSet, nodes []*corev1.Node, podsOn map[string][]*corev1.Pod, hash string, now time.Time) counts {
	p := placementOf(ds)
	var n counts
	for _, node := range nodes {
		pods := podsOn[node.Name]
		if !p.on(node).shouldRun {
			if len(pods) > 0 {
				n.misscheduled++
			}
			continue
		}
		n.desired++
		if len(pods) == 0 {
			continue
		}
		n.current++
		oldest := append([]*corev1.Pod(nil), pods...)
		sortOldestFirst(oldest)
		pod := oldest[0]
		if controller.PodReady(pod) {
			n.ready++
			if isAvailable(pod, ds.Spec.MinReadySeconds, now) {
				n.available++
			}
		}
		if isUpdated(pod, ds, hash) {
			n.updated++
		}
	}
	return n
}

// updateStatus writes ds's status from its pods; observedGeneration moves
// only when the sync acted on this generation (observe). While pods are
// ready but not yet available, a re-check is planned for the moment the
// first of them becomes available (nothing else would say so).
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, revs revisions, observe bool) error {
	now := c.clock.Now()
	n := countPods(ds, nodes, byNode(pods, false), revs.hash(), now)
	if err := c.storeStatus(ctx, ds, n, observe); err != nil {
		return err
	}
	if at, ok := firstAvailable(pods, ds.Spec.MinReadySeconds, now); ok {
		c.recheckAt(controller.Key(ds), at)
	}
	return nil
}

// firstAvailable is when the first pod that is ready, but not for
// minReadySeconds yet, becomes available: just past that moment, as a pod
// is available once strictly more than minReadySeconds have passed. ok is
// false when no pod is waiting.
func firstAvailable(pods []*corev1.Pod, minReadySeconds int32, now time.Time) (time.Time, bool) {
	if minReadySeconds <= 0 {
		return time.Time{}, false
	}
	var first time.Time
	for _, pod := range pods {
		c := controller.ReadyCondition(pod)
		if pod.DeletionTimestamp != nil || c == nil || c.Status != corev1.ConditionTrue || isAvailable(pod, minReadySeconds, now) {
			continue
		}
		at := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if first.IsZero() {
		return time.Time{}, false
	}
	return first.Add(time.Millisecond), true
}

// recheckAt syncs key again at the moment at of the injected clock. The
// delayer counts from "now"; if the clock passed at while the timer was
// being set, key is queued at once.
func (c *Controller) recheckAt(key string, at time.Time) {
	c.delay.After(key, at.Sub(c.clock.Now()))
	if !c.clock.Now().Before(at) {
		c.queue.Add(key)
	}
}

// storeStatus writes the numbers unless nothing changed; a failed write is
// retried once on a fresh read. collisionCount and conditions are kept as
// they are.
func (c *Controller) storeStatus(ctx context.Context, ds *appsv1.DaemonSet, n counts, observe bool) error {
	want := statusOf(n)
	if sameNumbers(ds.Status, want) && ds.Status.ObservedGeneration >= ds.Generation {
		return nil
	}
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	toUpdate := ds.DeepCopy()
	for i := 0; ; i++ {
		status := want
		status.ObservedGeneration = toUpdate.Status.ObservedGeneration
		if observe {
			status.ObservedGeneration = ds.Generation
		}
		status.Conditions = toUpdate.Status.Conditions
		status.CollisionCount = toUpdate.Status.CollisionCount
		toUpdate.Status = status
		_, err := client.UpdateStatus(ctx, toUpdate, metav1.UpdateOptions{})
		if err == nil || i >= statusUpdateRetries {
			return err
		}
		if toUpdate, err = client.Get(ctx, ds.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
}

func statusOf(n counts) appsv1.DaemonSetStatus {
	return appsv1.DaemonSetStatus{
		DesiredNumberScheduled: n.desired,
		CurrentNumberScheduled: n.current,
		NumberMisscheduled:     n.misscheduled,
		NumberReady:            n.ready,
		UpdatedNumberScheduled: n.updated,
		NumberAvailable:        n.available,
		NumberUnavailable:      n.desired - n.available,
	}
}

func sameNumbers(a, b appsv1.DaemonSetStatus) bool {
	return a.DesiredNumberScheduled == b.DesiredNumberScheduled &&
		a.CurrentNumberScheduled == b.CurrentNumberScheduled &&
		a.NumberMisscheduled == b.NumberMisscheduled &&
		a.NumberReady == b.NumberReady &&
		a.UpdatedNumberScheduled == b.UpdatedNumberScheduled &&
		a.NumberAvailable == b.NumberAvailable &&
		a.NumberUnavailable == b.NumberUnavailable
}
