package podautoscaler

import (
	"context"
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// sync brings the target of hpa (a copy the caller owns) to the replica
// count its metrics call for, within its limits and behavior, and writes
// what it found into hpa's status. key names hpa in the history.
func (c *Controller) sync(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, key string) error {
	original := hpa.Status.DeepCopy()
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)

	scale, gr, err := c.targets.get(ctx, hpa.Namespace, ref)
	if err != nil {
		c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedGetScale", err.Error())
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", err)
		if werr := c.writeStatus(ctx, original, hpa); werr != nil {
			c.log.Info("cannot write the status of an autoscaler", "hpa", key, "err", werr)
		}
		var badVersion errInvalidAPIVersion
		var noMapping errNoMapping
		switch {
		case errors.As(err, &badVersion):
			return fmt.Errorf("invalid API version in scale target reference: %w", err)
		case errors.As(err, &noMapping):
			return fmt.Errorf("unable to determine resource for scale target reference: %w", err)
		}
		return fmt.Errorf("failed to query scale subresource for %s: %w", reference, err)
	}
	c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	current := scale.Spec.Replicas
	c.history.start(key, current, c.clock.Now())

	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	var (
		desired  int32
		reason   string
		statuses []autoscalingv2.MetricStatus
		partial  error // a failing metric that did not stop the others
		rescale  = true
	)
	switch {
	case current == 0:
		// Someone scaled the target to zero: the autoscaler stands aside
		// until they scale it up again (orch's API does not let an
		// autoscaler scale to zero itself; minReplicas is at least 1).
		rescale = false
		c.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		removeCondition(hpa, autoscalingv2.ScaledToZero)
	case current > hpa.Spec.MaxReplicas:
		reason, desired = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas
	case current < minReplicas:
		reason, desired = "Current number of replicas below Spec.MinReplicas", minReplicas
	default:
		proposal, metric, st, err := c.replicasForMetrics(ctx, hpa, scale)
		statuses = st
		if err != nil && proposal == -1 {
			c.setCurrent(hpa, current, statuses)
			if werr := c.writeStatus(ctx, original, hpa); werr != nil {
				c.log.Info("cannot write the status of an autoscaler", "hpa", key, "err", werr)
			}
			c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference, err)
		}
		partial = err
		c.log.Debug("proposing desired replicas", "hpa", key, "desiredReplicas", proposal, "metric", metric,
			"tolerances", c.tolerances(hpa), "scaleTarget", reference)
		desired = proposal
		switch {
		case desired > current:
			reason = fmt.Sprintf("%s above target", metric)
		case desired < current:
			reason = "All metrics below target"
		}
		desired = c.normalize(hpa, key, current, desired, minReplicas)
		rescale = desired != current
	}

	if rescale {
		if err := c.targets.update(ctx, gr, scale, desired); err != nil {
			c.recorder.Eventf(hpa, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", desired, reason, err)
			c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: %v", err)
			c.setCurrent(hpa, current, statuses)
			if werr := c.writeStatus(ctx, original, hpa); werr != nil {
				c.log.Info("cannot write the status of an autoscaler", "hpa", key, "err", werr)
			}
			return fmt.Errorf("failed to rescale %s: %w", reference, err)
		}
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", "the HPA controller was able to update the target scale to %d", desired)
		c.recorder.Eventf(hpa, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", desired, reason)
		c.history.scaled(hpa.Spec.Behavior, key, current, desired, c.clock.Now(), c.downscaleWindow)
		removeCondition(hpa, autoscalingv2.ScaledToZero)
		c.log.Info("rescaled", "hpa", key, "currentReplicas", current, "desiredReplicas", desired, "reason", reason)
	} else {
		desired = current
	}
	c.setStatus(hpa, current, desired, statuses, rescale)
	if err := c.writeStatus(ctx, original, hpa); err != nil {
		return err
	}
	return partial
}

// tolerances are the controller's tolerance, or those hpa's behavior sets.
func (c *Controller) tolerances(hpa *autoscalingv2.HorizontalPodAutoscaler) tolerances {
	t := tolerances{scaleDown: c.tolerance, scaleUp: c.tolerance}
	if b := hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.scaleDown = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.scaleUp = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}
