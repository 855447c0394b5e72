package horizontalpodautoscalers

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	maxPeriodSeconds              = 1800
	maxStabilizationWindowSeconds = 3600
	// minReplicasLowerBound is 1: scaling to zero is an alpha feature.
	minReplicasLowerBound = 1
)

var (
	selectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	policyTypes    = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
	sourceTypes    = []string{
		string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
		string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType),
	}
)

func validate(obj runtime.Object) field.ErrorList {
	spec := &obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < minReplicasLowerBound {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *spec.MinReplicas, fmt.Sprintf("must be greater than or equal to %d", minReplicasLowerBound)))
	}
	if spec.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateReference(spec.ScaleTargetRef, p.Child("scaleTargetRef"))...)
	for i, m := range spec.Metrics {
		errs = append(errs, validateMetric(m, p.Child("metrics").Index(i))...)
	}
	if spec.Behavior != nil {
		errs = append(errs, validateRules(spec.Behavior.ScaleUp, p.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateRules(spec.Behavior.ScaleDown, p.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateReference(ref autoscalingv2.CrossVersionObjectReference, p *field.Path) field.ErrorList {
	errs := segment(ref.Kind, p.Child("kind"), "")
	errs = append(errs, segment(ref.Name, p.Child("name"), "")...)
	if ref.APIVersion != "" {
		if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, err.Error()))
		}
	}
	return errs
}

// segment checks a required name that must be safe in a URL path.
func segment(value string, p *field.Path, missing string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(p, missing)}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

func validateRules(rules *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if rules == nil {
		return nil
	}
	var errs field.ErrorList
	if w := rules.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		}
		if *w > maxStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %v", maxStabilizationWindowSeconds)))
		}
	}
	if s := rules.SelectPolicy; s != nil && !sets.New(selectPolicies...).Has(string(*s)) {
		errs = append(errs, field.NotSupported(p.Child("selectPolicy"), *s, selectPolicies))
	}
	if t := rules.Tolerance; t != nil && t.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), t.String(), "must be greater than or equal to zero"))
	}
	pp := p.Child("policies")
	if len(rules.Policies) == 0 {
		errs = append(errs, field.Required(pp, "must specify at least one Policy"))
	}
	for i, pol := range rules.Policies {
		ip := pp.Index(i)
		if pol.Type != autoscalingv2.PodsScalingPolicy && pol.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(ip.Child("type"), pol.Type, policyTypes))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
		}
		if pol.PeriodSeconds > maxPeriodSeconds {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", maxPeriodSeconds)))
		}
	}
	return errs
}

// validateMetric checks a metric: a known type, whose source (and only it) is set.
func validateMetric(m autoscalingv2.MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	present := map[string]bool{
		"object": m.Object != nil, "pods": m.Pods != nil, "resource": m.Resource != nil,
		"containerResource": m.ContainerResource != nil, "external": m.External != nil,
	}
	expected := ""
	switch m.Type {
	case autoscalingv2.ObjectMetricSourceType:
		expected = "object"
		if m.Object != nil {
			errs = append(errs, validateObject(m.Object, p.Child("object"))...)
		}
	case autoscalingv2.PodsMetricSourceType:
		expected = "pods"
		if m.Pods != nil {
			errs = append(errs, validatePods(m.Pods, p.Child("pods"))...)
		}
	case autoscalingv2.ResourceMetricSourceType:
		expected = "resource"
		if m.Resource != nil {
			errs = append(errs, validateResource(string(m.Resource.Name), "", m.Resource.Target, false, p.Child("resource"))...)
		}
	case autoscalingv2.ContainerResourceMetricSourceType:
		expected = "containerResource"
		if c := m.ContainerResource; c != nil {
			errs = append(errs, validateResource(string(c.Name), c.Container, c.Target, true, p.Child("containerResource"))...)
		}
	case autoscalingv2.ExternalMetricSourceType:
		expected = "external"
		if m.External != nil {
			errs = append(errs, validateExternal(m.External, p.Child("external"))...)
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, sourceTypes))
	}
	if expected != "" && !present[expected] {
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	for _, name := range []string{"object", "pods", "resource", "containerResource", "external"} {
		if present[name] && name != expected {
			errs = append(errs, field.Forbidden(p.Child(name), "must populate the given metric source only"))
		}
	}
	return errs
}

func validateObject(src *autoscalingv2.ObjectMetricSource, p *field.Path) field.ErrorList {
	errs := validateReference(src.DescribedObject, p.Child("describedObject"))
	errs = append(errs, validateIdentifier(src.Metric, p.Child("metric"))...)
	errs = append(errs, validateTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternal(src *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := validateIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePods(src *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := validateIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateTarget(src.Target, p.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

// validateResource checks a resource or container resource metric.
func validateResource(name, container string, target autoscalingv2.MetricTarget, inContainer bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	}
	if inContainer {
		if container == "" {
			errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
		} else {
			for _, msg := range validation.IsDNS1123Label(container) {
				errs = append(errs, field.Invalid(p.Child("container"), container, msg))
			}
		}
	}
	errs = append(errs, validateTarget(target, p.Child("target"))...)
	if target.AverageUtilization == nil && target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if target.AverageUtilization != nil && target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	return segment(id.Name, p.Child("name"), "must specify a metric name")
}
