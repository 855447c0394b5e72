// Package horizontalpodautoscalers is the registry entry for
// horizontalpodautoscalers: autoscaling/v2, the stored version, and
// autoscaling/v1, converted from and to it as upstream converts (v1.go).
package horizontalpodautoscalers

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch/internal/apiserver/registry"
)

// defaultCPUUtilization is the target of the metric an autoscaler gets when
// it names none.
const defaultCPUUtilization = 80

// Resource returns the horizontalpodautoscalers entry.
func Resource() registry.Resource {
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()
	return registry.Resource{
		GroupVersion: autoscalingv2.SchemeGroupVersion,
		Resource:     "horizontalpodautoscalers",
		Kind:         "HorizontalPodAutoscaler",
		SingularName: "horizontalpodautoscaler",
		Namespaced:   true,
		ShortNames:   []string{"hpa"},
		Categories:   []string{"all"},
		New:          func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		NewList:      func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		HasStatus:    true,
		Default:      setDefaults,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*autoscalingv2.HorizontalPodAutoscaler).Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
		},
		Validate: validate,
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
			{Name: "Reference", Type: "string", Description: spec["scaleTargetRef"]},
			{Name: "Targets", Type: "string", Description: spec["metrics"]},
			{Name: "MinPods", Type: "string", Description: spec["minReplicas"]},
			{Name: "MaxPods", Type: "string", Description: spec["maxReplicas"]},
			{Name: "Replicas", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
			{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		},
		Row: row,
	}
}

func setDefaults(obj runtime.Object) {
	spec := &obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec
	if spec.MinReplicas == nil {
		one := int32(1)
		spec.MinReplicas = &one
	}
	if len(spec.Metrics) == 0 {
		utilization := int32(defaultCPUUtilization)
		spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &utilization},
			},
		}}
	}
	if b := spec.Behavior; b != nil {
		b.ScaleUp = fillRules(b.ScaleUp, scaleUpDefaults())
		b.ScaleDown = fillRules(b.ScaleDown, scaleDownDefaults())
	}
}

// scaleUpDefaults is the scale-up behavior an autoscaler has when it sets
// none: no stabilization, at most 4 pods or 100% more every 15 seconds.
func scaleUpDefaults() *autoscalingv2.HPAScalingRules {
	window := int32(0)
	max := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window,
		SelectPolicy:               &max,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// scaleDownDefaults is the default scale-down behavior: up to 100% fewer
// every 15 seconds. The stabilization window stays unset, so the
// controller's own setting applies.
func scaleDownDefaults() *autoscalingv2.HPAScalingRules {
	max := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: &max,
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
}

// fillRules returns the given rules with their unset fields taken from defaults.
func fillRules(given, defaults *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if given == nil {
		return defaults
	}
	if given.SelectPolicy != nil {
		defaults.SelectPolicy = given.SelectPolicy
	}
	if given.StabilizationWindowSeconds != nil {
		defaults.StabilizationWindowSeconds = given.StabilizationWindowSeconds
	}
	if given.Policies != nil {
		defaults.Policies = given.Policies
	}
	if given.Tolerance != nil {
		defaults.Tolerance = given.Tolerance
	}
	return defaults
}

func row(obj runtime.Object, now time.Time) []interface{} {
	hpa := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	ref := fmt.Sprintf("%s/%s", hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name)
	minPods := "<unset>"
	if hpa.Spec.MinReplicas != nil {
		minPods = fmt.Sprintf("%d", *hpa.Spec.MinReplicas)
	}
	return []interface{}{hpa.Name, ref, targets(hpa.Spec.Metrics, hpa.Status.CurrentMetrics), minPods,
		int64(hpa.Spec.MaxReplicas), int64(hpa.Status.CurrentReplicas), registry.Age(hpa.CreationTimestamp, now)}
}

// targets renders "current/target" for the first two metrics, e.g.
// "cpu: 40%/80%"; status entries are matched to metrics by position.
func targets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	const max = 2
	var list []string
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, metricCell(spec, st))
	}
	if len(list) <= max {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ", "), len(list)-max)
}

func metricCell(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	unknown := "<unknown>"
	switch spec.Type {
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.External != nil {
			cur = &st.External.Current
		}
		return valueCell(spec.External.Target, cur)
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Object != nil {
			cur = &st.Object.Current
		}
		return valueCell(spec.Object.Target, cur)
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil {
			break
		}
		current := unknown
		if st != nil && st.Pods != nil {
			current = quantity(st.Pods.Current.AverageValue)
		}
		return current + "/" + quantity(spec.Pods.Target.AverageValue)
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Resource != nil {
			cur = &st.Resource.Current
		}
		return resourceCell(spec.Resource.Name, spec.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return resourceCell(spec.ContainerResource.Name, spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// valueCell renders an object or external metric: per-pod averages get an
// "(avg)" suffix.
func valueCell(target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s (avg)", current, target.AverageValue.String())
	}
	if cur != nil {
		current = quantity(cur.Value)
	}
	return current + "/" + quantity(target.Value)
}

func resourceCell(name corev1.ResourceName, target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil {
			current = quantity(cur.AverageValue)
		}
		return fmt.Sprintf("%s: %s/%s", name, current, target.AverageValue.String())
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	want := "<auto>"
	if target.AverageUtilization != nil {
		want = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return fmt.Sprintf("%s: %s/%s", name, current, want)
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return "<unknown>"
	}
	return q.String()
}
