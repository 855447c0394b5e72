package horizontalpodautoscalers

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// metricSpecToV2 converts an autoscaling/v1 metric, as the metrics annotation
// holds it, to autoscaling/v2.
func metricSpecToV2(in autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if o := in.Object; o != nil {
		// A plain value unless an average is given; then a value of zero,
		// which v1 cannot leave out, means none.
		target := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &o.TargetValue}
		if o.AverageValue != nil {
			target = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: o.AverageValue}
			if !o.TargetValue.IsZero() {
				target.Value = &o.TargetValue
			}
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: o.Target.Kind, Name: o.Target.Name, APIVersion: o.Target.APIVersion},
			Metric:          autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
			Target:          target,
		}
	}
	if p := in.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &p.TargetAverageValue},
		}
	}
	if r := in.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: r.Name, Target: resourceTarget(r.TargetAverageUtilization, r.TargetAverageValue)}
	}
	if c := in.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{
			Name: c.Name, Container: c.Container, Target: resourceTarget(c.TargetAverageUtilization, c.TargetAverageValue),
		}
	}
	if e := in.External; e != nil {
		kind := autoscalingv2.AverageValueMetricType
		if e.TargetValue != nil {
			kind = autoscalingv2.ValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Target: autoscalingv2.MetricTarget{Type: kind, Value: e.TargetValue, AverageValue: e.TargetAverageValue},
		}
	}
	return out
}

// resourceTarget is a (container) resource target: a utilization when one
// is given, else an average value.
func resourceTarget(utilization *int32, average *resource.Quantity) autoscalingv2.MetricTarget {
	kind := autoscalingv2.AverageValueMetricType
	if utilization != nil {
		kind = autoscalingv2.UtilizationMetricType
	}
	return autoscalingv2.MetricTarget{Type: kind, AverageValue: average, AverageUtilization: utilization}
}

// metricSpecFromV2 converts an autoscaling/v2 metric to the autoscaling/v1
// shape of the metrics annotation.
func metricSpecFromV2(in autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(in.Type)}
	if o := in.Object; o != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference{Kind: o.DescribedObject.Kind, Name: o.DescribedObject.Name, APIVersion: o.DescribedObject.APIVersion},
			MetricName:   o.Metric.Name,
			TargetValue:  valueOrZero(o.Target.Value),
			Selector:     o.Metric.Selector,
			AverageValue: o.Target.AverageValue,
		}
	}
	if p := in.Pods; p != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: p.Metric.Name, TargetAverageValue: valueOrZero(p.Target.AverageValue), Selector: p.Metric.Selector}
	}
	if r := in.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: r.Name, TargetAverageUtilization: r.Target.AverageUtilization, TargetAverageValue: r.Target.AverageValue}
	}
	if c := in.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{
			Name: c.Name, Container: c.Container, TargetAverageUtilization: c.Target.AverageUtilization, TargetAverageValue: c.Target.AverageValue,
		}
	}
	if e := in.External; e != nil {
		out.External = &autoscalingv1.ExternalMetricSource{
			MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector, TargetValue: e.Target.Value, TargetAverageValue: e.Target.AverageValue,
		}
	}
	return out
}

// metricStatusToV2 converts an autoscaling/v1 current metric, as the
// current-metrics annotation holds it, to autoscaling/v2.
func metricStatusToV2(in autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(in.Type)}
	if o := in.Object; o != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: o.Target.Kind, Name: o.Target.Name, APIVersion: o.Target.APIVersion},
			Metric:          autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
			Current:         autoscalingv2.MetricValueStatus{Value: &o.CurrentValue, AverageValue: o.AverageValue},
		}
	}
	if p := in.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: &p.CurrentAverageValue},
		}
	}
	if r := in.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{
			Name: r.Name, Current: autoscalingv2.MetricValueStatus{AverageValue: &r.CurrentAverageValue, AverageUtilization: r.CurrentAverageUtilization},
		}
	}
	if c := in.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{
			Name: c.Name, Container: c.Container,
			Current: autoscalingv2.MetricValueStatus{AverageValue: &c.CurrentAverageValue, AverageUtilization: c.CurrentAverageUtilization},
		}
	}
	if e := in.External; e != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: &e.CurrentValue, AverageValue: e.CurrentAverageValue},
		}
	}
	return out
}

// metricStatusFromV2 converts an autoscaling/v2 current metric to the
// autoscaling/v1 shape of the current-metrics annotation.
func metricStatusFromV2(in autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(in.Type)}
	if o := in.Object; o != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target:       autoscalingv1.CrossVersionObjectReference{Kind: o.DescribedObject.Kind, Name: o.DescribedObject.Name, APIVersion: o.DescribedObject.APIVersion},
			MetricName:   o.Metric.Name,
			CurrentValue: valueOrZero(o.Current.Value),
			Selector:     o.Metric.Selector,
			AverageValue: o.Current.AverageValue,
		}
	}
	if p := in.Pods; p != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: p.Metric.Name, CurrentAverageValue: valueOrZero(p.Current.AverageValue), Selector: p.Metric.Selector}
	}
	if r := in.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{
			Name: r.Name, CurrentAverageUtilization: r.Current.AverageUtilization, CurrentAverageValue: valueOrZero(r.Current.AverageValue),
		}
	}
	if c := in.ContainerResource; c != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{
			Name: c.Name, Container: c.Container,
			CurrentAverageUtilization: c.Current.AverageUtilization, CurrentAverageValue: valueOrZero(c.Current.AverageValue),
		}
	}
	if e := in.External; e != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{
			MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector,
			CurrentValue: valueOrZero(e.Current.Value), CurrentAverageValue: e.Current.AverageValue,
		}
	}
	return out
}

// valueOrZero fills a v1 quantity that cannot be left out: zero when unset.
func valueOrZero(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return *q
}
