package podautoscaler

import (
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// history is what the controller remembers of each autoscaler between
// syncs, in memory as upstream does (a restart forgets it): its recent
// recommendations and the scale-ups and scale-downs it made.
type history struct {
	mu              sync.Mutex
	recommendations map[string][]recommendation
	ups, downs      map[string][]scaleEvent
}

func newHistory() *history {
	return &history{recommendations: map[string][]recommendation{},
		ups: map[string][]scaleEvent{}, downs: map[string][]scaleEvent{}}
}

// start records current as the first recommendation of key, so that a
// new autoscaler (or a restarted controller) does not scale down at once.
func (h *history) start(key string, current int32, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recommendations[key] == nil {
		h.recommendations[key] = []recommendation{{current, now}}
	}
}

// forget drops what is remembered of key (its autoscaler is gone).
func (h *history) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.recommendations, key)
	delete(h.ups, key)
	delete(h.downs, key)
}

// scaled records that key's target went from prev to next replicas. Only
// an autoscaler with spec.behavior needs its scale events.
func (h *history) scaled(b *autoscalingv2.HorizontalPodAutoscalerBehavior, key string, prev, next int32, now time.Time, downWindow time.Duration) {
	if b == nil {
		return
	}
	up, down := effectiveRules(b, downWindow)
	h.mu.Lock()
	defer h.mu.Unlock()
	if next > prev {
		h.ups[key] = recordScaleEvent(h.ups[key], next-prev, longestPeriod(up), now)
	} else {
		h.downs[key] = recordScaleEvent(h.downs[key], prev-next, longestPeriod(down), now)
	}
}

// normalize turns the count the metrics call for into the count to scale
// to: stabilized over the recent recommendations, then bounded by the
// scaling limits and minReplicas and maxReplicas, with spec.behavior or,
// without one, the legacy rules. It sets AbleToScale (stabilized or
// ready) and ScalingLimited on hpa.
func (c *Controller) normalize(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, current, desired, minReplicas int32) int32 {
	now := c.clock.Now()
	h := c.history
	h.mu.Lock()
	defer h.mu.Unlock()
	var (
		stable, limited         int32
		stableReason, stableMsg string
		limitReason, limitMsg   string
	)
	if hpa.Spec.Behavior == nil {
		stable, h.recommendations[key] = stabilizeLegacy(h.recommendations[key], desired, c.downscaleWindow, now)
		stableReason, stableMsg = reasonScaleDownStable, msgScaleDownStable
		limited, limitReason, limitMsg = limitLegacy(current, stable, minReplicas, hpa.Spec.MaxReplicas)
	} else {
		up, down := effectiveRules(hpa.Spec.Behavior, c.downscaleWindow)
		n := normalization{up: up, down: down, min: minReplicas, max: hpa.Spec.MaxReplicas, current: current, desired: desired}
		stable, stableReason, stableMsg, h.recommendations[key] = stabilizeWithBehavior(h.recommendations[key], n, now)
		n.desired = stable
		limited, limitReason, limitMsg = limitWithBehavior(n, h.ups[key], h.downs[key], now)
	}
	if stable != desired {
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, stableReason, "%s", stableMsg)
	} else {
		c.setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	status := corev1.ConditionTrue
	if limited == stable {
		status = corev1.ConditionFalse
	}
	c.setCondition(hpa, autoscalingv2.ScalingLimited, status, limitReason, "%s", limitMsg)
	return limited
}
