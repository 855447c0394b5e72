package disruption

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// staleDisruptionCondition tells whether pod carries a DisruptionTarget=True
// condition that nothing acted on (the pod is not terminating and not
// finished; the kubelet's own condition is never stale), and how long until
// it counts as stale.
func (c *Controller) staleDisruptionCondition(pod *corev1.Pod) (bool, time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	cond := disruptionTarget(pod)
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason == corev1.PodReasonTerminationByKubelet {
		return false, 0
	}
	return true, max(staleDisruptionTimeout-c.clock.Since(cond.LastTransitionTime.Time), 0)
}

func disruptionTarget(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.DisruptionTarget {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// syncStalePod resets a stale DisruptionTarget condition to False.
func (c *Controller) syncStalePod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	stale, after := c.staleDisruptionCondition(pod)
	if !stale {
		return nil
	}
	if after > 0 {
		c.staleAfter.After(key, after)
		return nil
	}
	updated := pod.DeepCopy()
	*disruptionTarget(updated) = corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(c.clock.Now()), ObservedGeneration: pod.Generation,
	}
	if _, err := c.client.CoreV1().Pods(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return err
	}
	c.log.Info("reset stale DisruptionTarget condition to False", "pod", key)
	return nil
}
