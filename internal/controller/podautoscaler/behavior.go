package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Without spec.behavior a scale-up may at most double the replicas, and
// always reach at least this many.
const (
	legacyScaleUpFactor  = 2.0
	legacyScaleUpMinimum = 4.0
)

// recommendation is a desired replica count computed from the metrics,
// before stabilization and limits, and when.
type recommendation struct {
	replicas int32
	at       time.Time
}

// scaleEvent is a change of the target's replicas the controller made
// (always positive: scale-ups and scale-downs are kept apart). An outdated
// event is older than every policy period and may be reused.
type scaleEvent struct {
	change   int32
	at       time.Time
	outdated bool
}

// Condition reasons and messages of ScalingLimited and AbleToScale.
const (
	reasonDesiredWithinRange = "DesiredWithinRange"
	reasonTooFewReplicas     = "TooFewReplicas"
	reasonTooManyReplicas    = "TooManyReplicas"
	reasonScaleUpLimit       = "ScaleUpLimit"
	reasonScaleDownLimit     = "ScaleDownLimit"
	reasonScaleUpStabilized  = "ScaleUpStabilized"
	reasonScaleDownStable    = "ScaleDownStabilized"

	msgDesiredWithinRange = "the desired count is within the acceptable range"
	msgTooFewReplicas     = "the desired replica count is less than the minimum replica count"
	msgTooManyReplicas    = "the desired replica count is more than the maximum replica count"
	msgScaleUpLimit       = "the desired replica count is increasing faster than the maximum scale rate"
	msgScaleDownLimit     = "the desired replica count is decreasing faster than the maximum scale rate"
	msgScaleUpStabilized  = "recent recommendations were lower than current one, applying the lowest recent recommendation"
	msgScaleDownStable    = "recent recommendations were higher than current one, applying the highest recent recommendation"
)

// effectiveRules returns the scale-up and scale-down rules of b with what
// is unset taken from the API's defaults (which the apiserver fills in
// when a behavior is given; this keeps a partial one safe): scale up with
// no stabilization by at most 4 pods or 100% every 15 seconds, whichever
// is more; scale down by up to 100% every 15 seconds, stabilized over
// downWindow (the controller's default window) unless b sets one.
func effectiveRules(b *autoscalingv2.HorizontalPodAutoscalerBehavior, downWindow time.Duration) (up, down autoscalingv2.HPAScalingRules) {
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	up = autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: new(int32), SelectPolicy: &maxPolicy,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
	window := int32(downWindow / time.Second)
	down = autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window, SelectPolicy: &maxPolicy,
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
	if b == nil {
		return up, down
	}
	return fill(up, b.ScaleUp), fill(down, b.ScaleDown)
}

func fill(defaults autoscalingv2.HPAScalingRules, given *autoscalingv2.HPAScalingRules) autoscalingv2.HPAScalingRules {
	if given == nil {
		return defaults
	}
	out := *given.DeepCopy()
	if out.StabilizationWindowSeconds == nil {
		out.StabilizationWindowSeconds = defaults.StabilizationWindowSeconds
	}
	if out.SelectPolicy == nil {
		out.SelectPolicy = defaults.SelectPolicy
	}
	if out.Policies == nil {
		out.Policies = defaults.Policies
	}
	return out
}

// stabilizeLegacy applies the one stabilization an autoscaler without
// spec.behavior has: it never goes below the highest recommendation of
// the last window. It returns the stabilized count and recs with desired
// recorded (in place of a sample older than the window, if there is one).
func stabilizeLegacy(recs []recommendation, desired int32, window time.Duration, now time.Time) (int32, []recommendation) {
	highest := desired
	cutoff := now.Add(-window)
	old := -1
	for i, r := range recs {
		if r.at.Before(cutoff) {
			old = i
		} else if r.replicas > highest {
			highest = r.replicas
		}
	}
	return highest, remember(recs, old, recommendation{desired, now})
}

// limitLegacy bounds desired by minReplicas, maxReplicas and the legacy
// scale-up limit, and says which bound (if any) applied.
func limitLegacy(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	upper, reason, msg := maxReplicas, reasonTooManyReplicas, msgTooManyReplicas
	if limit := int32(math.Max(legacyScaleUpFactor*float64(current), legacyScaleUpMinimum)); maxReplicas > limit {
		upper, reason, msg = limit, reasonScaleUpLimit, msgScaleUpLimit
	}
	switch {
	case desired < minReplicas:
		return minReplicas, reasonTooFewReplicas, msgTooFewReplicas
	case desired > upper:
		return upper, reason, msg
	}
	return desired, reasonDesiredWithinRange, msgDesiredWithinRange
}

// normalization is what limiting a recommendation by spec.behavior needs.
type normalization struct {
	up, down                   autoscalingv2.HPAScalingRules // effectiveRules
	min, max, current, desired int32
}

// stabilizeWithBehavior keeps the count between the lowest recommendation
// of the scale-up window and the highest of the scale-down window (and so
// at the current count when they disagree with the move). It returns the
// stabilized count, the AbleToScale reason and message that apply when it
// differs from n.desired, and recs with n.desired recorded (in place of a
// sample older than both windows, if there is one).
func stabilizeWithBehavior(recs []recommendation, n normalization, now time.Time) (int32, string, string, []recommendation) {
	upCutoff := now.Add(-time.Duration(*n.up.StabilizationWindowSeconds) * time.Second)
	downCutoff := now.Add(-time.Duration(*n.down.StabilizationWindowSeconds) * time.Second)
	lowest, highest := n.desired, n.desired
	old := -1
	for i, r := range recs {
		if r.at.After(upCutoff) {
			lowest = min(lowest, r.replicas)
		}
		if r.at.After(downCutoff) {
			highest = max(highest, r.replicas)
		}
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			old = i
		}
	}
	stable := min(max(n.current, lowest), highest)
	recs = remember(recs, old, recommendation{n.desired, now})
	if n.desired >= n.current {
		return stable, reasonScaleUpStabilized, msgScaleUpStabilized, recs
	}
	return stable, reasonScaleDownStable, msgScaleDownStable, recs
}

// limitWithBehavior bounds n.desired (already stabilized) by the scaling
// policies over the recent scale events, and by minReplicas and
// maxReplicas, and says which bound (if any) applied.
func limitWithBehavior(n normalization, ups, downs []scaleEvent, now time.Time) (int32, string, string) {
	switch {
	case n.desired > n.current:
		limit := max(scaleUpLimit(n.current, ups, downs, n.up, now), n.current)
		upper, reason, msg := n.max, reasonTooManyReplicas, msgTooManyReplicas
		if upper > limit {
			upper, reason, msg = limit, reasonScaleUpLimit, msgScaleUpLimit
		}
		if n.desired > upper {
			return upper, reason, msg
		}
	case n.desired < n.current:
		limit := min(scaleDownLimit(n.current, ups, downs, n.down, now), n.current)
		lower, reason, msg := n.min, reasonTooFewReplicas, msgTooFewReplicas
		if lower < limit {
			lower, reason, msg = limit, reasonScaleDownLimit, msgScaleDownLimit
		}
		if n.desired < lower {
			return lower, reason, msg
		}
	}
	return n.desired, reasonDesiredWithinRange, msgDesiredWithinRange
}

// scaleUpLimit is the most replicas rules allow now: for each policy, the
// count at the start of its period plus what the policy allows over it;
// the highest of those (Max), the lowest (Min), or current (Disabled).
func scaleUpLimit(current int32, ups, downs []scaleEvent, rules autoscalingv2.HPAScalingRules, now time.Time) int32 {
	return policyLimit(current, ups, downs, rules, now, true)
}

// scaleDownLimit is the fewest replicas rules allow now, as scaleUpLimit.
func scaleDownLimit(current int32, ups, downs []scaleEvent, rules autoscalingv2.HPAScalingRules, now time.Time) int32 {
	return policyLimit(current, ups, downs, rules, now, false)
}

func policyLimit(current int32, ups, downs []scaleEvent, rules autoscalingv2.HPAScalingRules, now time.Time, up bool) int32 {
	sel := autoscalingv2.MaxChangePolicySelect
	if rules.SelectPolicy != nil {
		sel = *rules.SelectPolicy
	}
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	// The biggest change is the highest limit up and the lowest down.
	biggest := sel != autoscalingv2.MinChangePolicySelect
	pickHigher := biggest == up
	result := int32(math.MinInt32)
	if !pickHigher {
		result = math.MaxInt32
	}
	for _, p := range rules.Policies {
		start := current - changeInPeriod(p.PeriodSeconds, ups, now) + changeInPeriod(p.PeriodSeconds, downs, now)
		var proposed int32
		switch {
		case p.Type == autoscalingv2.PodsScalingPolicy && up:
			proposed = start + p.Value
		case p.Type == autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case p.Type == autoscalingv2.PercentScalingPolicy && up:
			// Rounded up, so that a small target still grows.
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		case p.Type == autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		default:
			continue
		}
		if pickHigher {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// changeInPeriod sums the changes of events in the last periodSeconds.
func changeInPeriod(periodSeconds int32, events []scaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var sum int32
	for _, e := range events {
		if e.at.After(cutoff) {
			sum += e.change
		}
	}
	return sum
}

// longestPeriod is the longest period of rules' policies, in seconds.
func longestPeriod(rules autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}

// recordScaleEvent returns events with a change of change at now,
// marking the events older than period seconds outdated and reusing the
// slot of one of them.
func recordScaleEvent(events []scaleEvent, change, period int32, now time.Time) []scaleEvent {
	cutoff := now.Add(-time.Duration(period) * time.Second)
	old := -1
	for i := range events {
		if events[i].at.Before(cutoff) {
			events[i].outdated = true
		}
		if events[i].outdated {
			old = i
		}
	}
	e := scaleEvent{change: change, at: now}
	if old >= 0 {
		events[old] = e
		return events
	}
	return append(events, e)
}

// remember puts r in place of recs[old], or appends it when old < 0.
func remember(recs []recommendation, old int, r recommendation) []recommendation {
	if old >= 0 {
		recs[old] = r
		return recs
	}
	return append(recs, r)
}
