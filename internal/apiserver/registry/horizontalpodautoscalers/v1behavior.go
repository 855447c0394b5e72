package horizontalpodautoscalers

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// behaviorJSON is the behavior as the autoscaling/v1 behavior annotation
// holds it. Upstream encodes its internal type, whose fields have no JSON
// tags: the keys are the Go field names, in this order, and unset fields
// are null. Decoding matches keys regardless of case, as upstream's does.
type behaviorJSON struct {
	ScaleUp   *rulesJSON
	ScaleDown *rulesJSON
}

// rulesJSON is HPAScalingRules in the behavior annotation.
type rulesJSON struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []policyJSON
	Tolerance                  *resource.Quantity
}

// policyJSON is HPAScalingPolicy in the behavior annotation.
type policyJSON struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func behaviorFromV2(in *autoscalingv2.HorizontalPodAutoscalerBehavior) behaviorJSON {
	return behaviorJSON{ScaleUp: rulesFromV2(in.ScaleUp), ScaleDown: rulesFromV2(in.ScaleDown)}
}

func rulesFromV2(in *autoscalingv2.HPAScalingRules) *rulesJSON {
	if in == nil {
		return nil
	}
	out := &rulesJSON{StabilizationWindowSeconds: in.StabilizationWindowSeconds, SelectPolicy: in.SelectPolicy, Tolerance: in.Tolerance}
	if in.Policies != nil {
		out.Policies = make([]policyJSON, 0, len(in.Policies))
	}
	for _, p := range in.Policies {
		out.Policies = append(out.Policies, policyJSON{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

func (b behaviorJSON) toV2() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: b.ScaleUp.toV2(), ScaleDown: b.ScaleDown.toV2()}
}

func (r *rulesJSON) toV2() *autoscalingv2.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	if r.Policies != nil {
		out.Policies = make([]autoscalingv2.HPAScalingPolicy, 0, len(r.Policies))
	}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, autoscalingv2.HPAScalingPolicy{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}
