package horizontalpodautoscalers

import (
	"encoding/json"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// The annotations in which autoscaling/v1 keeps what only autoscaling/v2
// can express. Their names and encodings are upstream's.
const (
	// metricsAnnotation holds the metrics other than CPU utilization, as a
	// JSON list of autoscaling/v1 MetricSpecs.
	metricsAnnotation = "autoscaling.alpha.kubernetes.io/metrics"
	// currentMetricsAnnotation holds every current metric, as a JSON list of
	// autoscaling/v1 MetricStatuses.
	currentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	// conditionsAnnotation holds the conditions, as a JSON list of
	// autoscaling/v1 HorizontalPodAutoscalerConditions.
	conditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"
	// behaviorAnnotation holds the behavior in upstream's internal shape:
	// Go field names as keys, nothing omitted (see behaviorJSON).
	behaviorAnnotation = "autoscaling.alpha.kubernetes.io/behavior"
	// The tolerance annotations are reserved: upstream sets neither (a
	// tolerance travels inside the behavior annotation) but drops both.
	scaleDownToleranceAnnotation = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	scaleUpToleranceAnnotation   = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
)

var roundTripAnnotations = []string{
	metricsAnnotation, currentMetricsAnnotation, conditionsAnnotation,
	behaviorAnnotation, scaleDownToleranceAnnotation, scaleUpToleranceAnnotation,
}

// ToV2 converts an autoscaling/v1 HorizontalPodAutoscaler to autoscaling/v2
// as upstream does (through its internal version): the CPU target becomes a
// CPU utilization metric, the annotations give back the other metrics, the
// behavior, the current metrics and the conditions, and are then dropped. An
// annotation that does not decode is ignored. With no metric at all, the
// autoscaler targets 80% CPU utilization. The input is not changed. The
// error is always nil: like upstream, nothing in v1 fails to convert.
func ToV2(in *autoscalingv1.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	in = in.DeepCopy()
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: in.ObjectMeta}
	out.APIVersion, out.Kind = autoscalingv2.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(*p)}
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime,
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	if p := in.Status.CurrentCPUUtilizationPercentage; p != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type:     autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: p}},
		}}
	}

	var others []autoscalingv1.MetricSpec
	if decode(in.Annotations, metricsAnnotation, &others) {
		// The CPU target, if any, comes after the annotated metrics.
		metrics := make([]autoscalingv2.MetricSpec, 0, len(others)+len(out.Spec.Metrics))
		for _, m := range others {
			metrics = append(metrics, metricSpecToV2(m))
		}
		out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
	}
	var behavior behaviorJSON
	if decode(in.Annotations, behaviorAnnotation, &behavior) && (behavior.ScaleUp != nil || behavior.ScaleDown != nil) {
		out.Spec.Behavior = behavior.toV2()
	}
	var current []autoscalingv1.MetricStatus
	if decode(in.Annotations, currentMetricsAnnotation, &current) {
		// The annotation knows more than currentCPUUtilizationPercentage.
		out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, 0, len(current))
		for _, m := range current {
			out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusToV2(m))
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(defaultCPUUtilization)}
	}
	var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
	if decode(in.Annotations, conditionsAnnotation, &conditions) {
		out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, 0, len(conditions))
		for _, c := range conditions {
			out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration,
			})
		}
	}
	out.Annotations = dropRoundTripAnnotations(out.Annotations)
	return out, nil
}

// FromV2 converts an autoscaling/v2 HorizontalPodAutoscaler to
// autoscaling/v1 as upstream does: the first CPU utilization metric becomes
// targetCPUUtilizationPercentage and the last current one
// currentCPUUtilizationPercentage; the other metrics, every current metric,
// the behavior and the conditions go into annotations, replacing any the
// object had. The input is not changed.
func FromV2(in *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	in = in.DeepCopy()
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: in.ObjectMeta}
	out.APIVersion, out.Kind = autoscalingv1.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	out.Annotations = dropRoundTripAnnotations(out.Annotations)
	ref := in.Spec.ScaleTargetRef
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			// Every CPU utilization metric is left out; the first is the target.
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				percent := *m.Resource.Target.AverageUtilization
				out.Spec.TargetCPUUtilizationPercentage = &percent
			}
			continue
		}
		others = append(others, metricSpecFromV2(m))
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime,
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	current := make([]autoscalingv1.MetricStatus, 0, len(in.Status.CurrentMetrics))
	for _, m := range in.Status.CurrentMetrics {
		if r := m.Resource; m.Type == autoscalingv2.ResourceMetricSourceType && r != nil && r.Name == corev1.ResourceCPU && r.Current.AverageUtilization != nil {
			percent := *r.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &percent
		}
		current = append(current, metricStatusFromV2(m))
	}
	conditions := make([]autoscalingv1.HorizontalPodAutoscalerCondition, 0, len(in.Status.Conditions))
	for _, c := range in.Status.Conditions {
		conditions = append(conditions, autoscalingv1.HorizontalPodAutoscalerCondition{
			Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration,
		})
	}

	set := func(key string, value interface{}) error {
		data, err := json.Marshal(value)
		if err != nil {
			return err
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = string(data)
		return nil
	}
	if len(others) > 0 {
		if err := set(metricsAnnotation, others); err != nil {
			return nil, err
		}
	}
	if len(current) > 0 {
		if err := set(currentMetricsAnnotation, current); err != nil {
			return nil, err
		}
	}
	if in.Spec.Behavior != nil {
		if err := set(behaviorAnnotation, behaviorFromV2(in.Spec.Behavior)); err != nil {
			return nil, err
		}
	}
	if len(conditions) > 0 {
		if err := set(conditionsAnnotation, conditions); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decode unmarshals the annotation key into v and reports whether it was
// there and decoded.
func decode(annotations map[string]string, key string, v interface{}) bool {
	data, ok := annotations[key]
	return ok && json.Unmarshal([]byte(data), v) == nil
}

// dropRoundTripAnnotations returns the annotations without the round-trip
// ones: a copy when there was one to drop, as upstream, else the same map.
func dropRoundTripAnnotations(in map[string]string) map[string]string {
	found := false
	for _, key := range roundTripAnnotations {
		_, has := in[key]
		found = found || has
	}
	if !found {
		return in
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	for _, key := range roundTripAnnotations {
		delete(out, key)
	}
	return out
}

// isCPUUtilization reports whether m is the metric autoscaling/v1 calls
// targetCPUUtilizationPercentage.
func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
		m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent},
		},
	}
}
