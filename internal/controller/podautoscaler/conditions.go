package podautoscaler

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setCondition sets condition t of hpa to status, reason and the message
// format makes of args, adding it when missing; its transition time moves
// only when its status changes.
func (c *Controller) setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType,
	status corev1.ConditionStatus, reason, format string, args ...any) {
	conds := hpa.Status.Conditions
	i := 0
	for i < len(conds) && conds[i].Type != t {
		i++
	}
	if i == len(conds) {
		conds = append(conds, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t})
	}
	cond := &conds[i]
	if cond.Status != status {
		cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
	}
	cond.Status, cond.Reason, cond.Message = status, reason, fmt.Sprintf(format, args...)
	hpa.Status.Conditions = conds
}

// removeCondition drops condition t from hpa.
func removeCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) {
	var kept []autoscalingv2.HorizontalPodAutoscalerCondition
	for _, cond := range hpa.Status.Conditions {
		if cond.Type != t {
			kept = append(kept, cond)
		}
	}
	hpa.Status.Conditions = kept
}

// setStatus writes the replica counts and metrics into hpa's status,
// keeping its conditions and last scale time (now, when it rescaled), and
// records the generation it acted on.
func (c *Controller) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, metrics []autoscalingv2.MetricStatus, rescaled bool) {
	generation := hpa.Generation
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: &generation,
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
		LastScaleTime:      hpa.Status.LastScaleTime,
		CurrentMetrics:     metrics,
		Conditions:         hpa.Status.Conditions,
	}
	if rescaled {
		now := metav1.NewTime(c.clock.Now())
		hpa.Status.LastScaleTime = &now
	}
}

// setCurrent is setStatus for a sync that ends before deciding: the
// desired count stays what it was.
func (c *Controller) setCurrent(hpa *autoscalingv2.HorizontalPodAutoscaler, current int32, metrics []autoscalingv2.MetricStatus) {
	c.setStatus(hpa, current, hpa.Status.DesiredReplicas, metrics, false)
}

// writeStatus writes hpa's status when it differs from old.
func (c *Controller) writeStatus(ctx context.Context, old *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if apiequality.Semantic.DeepEqual(old, &hpa.Status) {
		return nil
	}
	if _, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	return nil
}
