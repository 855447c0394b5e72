package podautoscaler

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// proposal is what one metric calls for: a replica count, the metric's
// description (for events) and its status.
type proposal struct {
	replicas int32
	name     string
	status   autoscalingv2.MetricStatus
}

// metricContext is what every metric of one sync shares.
type metricContext struct {
	hpa                          *autoscalingv2.HorizontalPodAutoscaler
	specReplicas, statusReplicas int32 // the target's scale
	selector                     labels.Selector
	pods                         []*corev1.Pod // those selector matches
	tolerances                   tolerances
}

// replicasForMetrics returns the highest replica count hpa's metrics call
// for, the description of the metric that calls for it, and every
// metric's status (empty for the failing ones). A metric that fails is
// reported (Warning event; ScalingActive False when it is the first)
// and, when some others work and would not scale down, returned as an
// error alongside their count; when all fail, or the working ones would
// scale down, the count is -1.
func (c *Controller) replicasForMetrics(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, scale *autoscalingv1.Scale) (int32, string, []autoscalingv2.MetricStatus, error) {
	selector, pods, err := c.targetPods(hpa, scale.Status.Selector)
	if err != nil {
		return -1, "", nil, err
	}
	specs := hpa.Spec.Metrics
	if len(specs) == 0 {
		err := errors.New("the HPA names no metrics to scale on")
		c.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidMetricSourceType", "the HPA was unable to compute the replica count: %v", err)
		return -1, "", nil, err
	}
	mc := metricContext{hpa: hpa, specReplicas: scale.Spec.Replicas, statusReplicas: scale.Status.Replicas,
		selector: selector, pods: pods, tolerances: c.tolerances(hpa)}
	statuses := make([]autoscalingv2.MetricStatus, len(specs))
	var (
		replicas    int32
		metric      string
		invalid     int
		first       error // wrapped with its metric
		firstCause  error // as the condition reports it
		firstReason string
	)
	for i, spec := range specs {
		p, reason, cause, err := c.replicasForMetric(ctx, mc, spec)
		if err != nil {
			c.recorder.Event(hpa, corev1.EventTypeWarning, reason, cause.Error())
			if invalid == 0 {
				first, firstCause, firstReason = err, cause, reason
			}
			invalid++
			continue
		}
		statuses[i] = p.status
		if replicas == 0 || p.replicas > replicas {
			replicas, metric = p.replicas, p.name
		}
	}
	if first != nil {
		if invalid >= len(specs) || replicas < mc.specReplicas {
			c.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, firstReason, "the HPA was unable to compute the replica count: %v", firstCause)
			replicas = -1
		}
		first = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w", invalid, len(specs), first)
		if replicas == -1 {
			return -1, "", statuses, first
		}
	}
	c.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from %s", metric)
	return replicas, metric, statuses, first
}

// targetPods parses the selector of the target's scale and returns it with
// the pods it matches, unless the target has none, it does not parse, or
// another autoscaler scales the same pods (ScalingActive False, and a
// Warning event).
func (c *Controller) targetPods(hpa *autoscalingv2.HorizontalPodAutoscaler, selector string) (labels.Selector, []*corev1.Pod, error) {
	if selector == "" {
		msg := "selector is required"
		c.recorder.Event(hpa, corev1.EventTypeWarning, "SelectorRequired", msg)
		c.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector")
		return nil, nil, errors.New(msg)
	}
	parsed, err := labels.Parse(selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		c.recorder.Event(hpa, corev1.EventTypeWarning, "InvalidSelector", msg)
		c.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "%s", msg)
		return nil, nil, errors.New(msg)
	}
	if !c.selectors.set(hpa.Namespace, hpa.Name, parsed) {
		return nil, nil, fmt.Errorf("HPA %s/%s was deleted during reconciliation", hpa.Namespace, hpa.Name)
	}
	pods, err := c.pods.Pods(hpa.Namespace).List(parsed)
	if err != nil {
		return nil, nil, err
	}
	if others := c.selectors.matching(hpa.Namespace, pods, 2); len(others) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", selector, others)
		c.recorder.Event(hpa, corev1.EventTypeWarning, "AmbiguousSelector", msg)
		c.setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", "%s", msg)
		return nil, nil, errors.New(msg)
	}
	return parsed, pods, nil
}

// replicasForMetric computes what one metric calls for. On failure it
// returns the reason and the error of the event and condition that report
// it (cause), and that error wrapped with the metric it is about (err).
func (c *Controller) replicasForMetric(ctx context.Context, mc metricContext, spec autoscalingv2.MetricSpec) (p proposal, reason string, cause, err error) {
	switch {
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		r := spec.Resource
		if p, cause = c.resourceProposal(ctx, mc, r.Name, "", r.Target); cause != nil {
			return p, "FailedGetResourceMetric", cause, fmt.Errorf("failed to get %s resource metric value: %w", r.Name, cause)
		}
		p.status = autoscalingv2.MetricStatus{Type: spec.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: r.Name, Current: p.status.Resource.Current}}
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		r := spec.ContainerResource
		if p, cause = c.resourceProposal(ctx, mc, r.Name, r.Container, r.Target); cause != nil {
			return p, "FailedGetContainerResourceMetric", cause, fmt.Errorf("failed to get %s container metric value: %w", r.Container, cause)
		}
		p.status = autoscalingv2.MetricStatus{Type: spec.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: r.Name, Container: r.Container, Current: p.status.Resource.Current}}
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		if p, cause = c.podsProposal(mc, spec.Pods); cause != nil {
			return p, "FailedGetPodsMetric", cause, fmt.Errorf("failed to get pods metric value: %w", cause)
		}
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		if p, cause = c.objectProposal(mc, spec.Object); cause != nil {
			return p, "FailedGetObjectMetric", cause, fmt.Errorf("failed to get object metric value: %w", cause)
		}
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		if p, cause = c.externalProposal(mc, spec.External); cause != nil {
			return p, "FailedGetExternalMetric", cause, fmt.Errorf("failed to get %s external metric value: %w", spec.External.Metric.Name, cause)
		}
	default:
		// The apiserver's validation lets no other kind through.
		cause = fmt.Errorf("unknown metric source type %q", spec.Type)
		return p, "InvalidMetricSourceType", cause, cause
	}
	return p, "", nil, nil
}

// resourceProposal computes what a resource's usage (of container alone,
// when named) calls for; the status it returns is a Resource one.
func (c *Controller) resourceProposal(ctx context.Context, mc metricContext, name corev1.ResourceName, container string, target autoscalingv2.MetricTarget) (proposal, error) {
	if target.AverageValue == nil && target.AverageUtilization == nil {
		return proposal{}, errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	items, err := c.resources.PodMetrics(ctx, mc.hpa.Namespace, mc.selector)
	if err != nil {
		err = fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	var samples podMetrics
	if err == nil {
		samples, _, err = resourceSamples(items, name, container)
	}
	if err != nil {
		what := "utilization"
		if target.AverageValue != nil {
			what = "usage"
		}
		return proposal{}, fmt.Errorf("failed to get %s %s: unable to get metrics for resource %s: %w", name, what, name, err)
	}
	in := c.calcInput(mc, samples)
	if target.AverageValue != nil {
		replicas, average, err := averageValueReplicas(in, name, target.AverageValue.MilliValue())
		if err != nil {
			return proposal{}, fmt.Errorf("failed to get %s usage: %w", name, err)
		}
		q := quantity(name, average)
		return proposal{replicas: replicas, name: fmt.Sprintf("%s resource", name), status: autoscalingv2.MetricStatus{
			Resource: &autoscalingv2.ResourceMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageValue: &q}}}}, nil
	}
	replicas, utilization, average, err := utilizationReplicas(in, name, container, *target.AverageUtilization)
	if err != nil {
		return proposal{}, fmt.Errorf("failed to get %s utilization: %w", name, err)
	}
	desc := fmt.Sprintf("%s resource utilization (percentage of request)", name)
	if container != "" {
		desc = fmt.Sprintf("%s container resource utilization (percentage of request)", name)
	}
	q := quantity(name, average)
	return proposal{replicas: replicas, name: desc, status: autoscalingv2.MetricStatus{Resource: &autoscalingv2.ResourceMetricStatus{
		Current: autoscalingv2.MetricValueStatus{AverageUtilization: &utilization, AverageValue: &q}}}}, nil
}

// podsProposal computes what a custom metric of the pods calls for.
func (c *Controller) podsProposal(mc metricContext, src *autoscalingv2.PodsMetricSource) (proposal, error) {
	metricSelector, err := metav1.LabelSelectorAsSelector(src.Metric.Selector)
	if err != nil {
		return proposal{}, err
	}
	if src.Target.AverageValue == nil {
		return proposal{}, errors.New("invalid pods metric source: only an AverageValue target is supported for pods metrics (Utilization is for Resource and ContainerResource metrics)")
	}
	samples, _, err := c.extra.podsMetric(mc.hpa.Namespace, src.Metric.Name, mc.selector, metricSelector)
	if err != nil {
		return proposal{}, fmt.Errorf("unable to get metric %s: %w", src.Metric.Name, err)
	}
	replicas, average, err := averageValueReplicas(c.calcInput(mc, samples), "", src.Target.AverageValue.MilliValue())
	if err != nil {
		return proposal{}, err
	}
	return proposal{replicas: replicas, name: fmt.Sprintf("pods metric %s", src.Metric.Name), status: autoscalingv2.MetricStatus{
		Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(average, resource.DecimalSI)}}}}, nil
}

// objectProposal computes what a custom metric of one object calls for.
func (c *Controller) objectProposal(mc metricContext, src *autoscalingv2.ObjectMetricSource) (proposal, error) {
	metricSelector, err := metav1.LabelSelectorAsSelector(src.Metric.Selector)
	if err != nil {
		return proposal{}, err
	}
	status := &autoscalingv2.ObjectMetricStatus{DescribedObject: src.DescribedObject,
		Metric: autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector}}
	ref := &src.DescribedObject
	fetch := func() (int64, error) {
		usage, _, err := c.extra.objectMetric(mc.hpa.Namespace, src.Metric.Name, ref, metricSelector)
		if err != nil {
			return 0, fmt.Errorf("unable to get metric %s on %s %s/%s: %w", src.Metric.Name, ref.Kind, mc.hpa.Namespace, ref.Name, err)
		}
		return usage, nil
	}
	p := proposal{status: autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: status}}
	switch {
	case src.Target.Type == autoscalingv2.ValueMetricType && src.Target.Value != nil:
		usage, err := fetch()
		if err != nil {
			return proposal{}, err
		}
		p.replicas, err = ratioReplicas(mc.specReplicas, float64(usage)/float64(src.Target.Value.MilliValue()), mc.tolerances, mc.pods)
		if err != nil {
			return proposal{}, err
		}
		status.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		p.name = fmt.Sprintf("%s metric %s", ref.Kind, src.Metric.Name)
	case src.Target.Type == autoscalingv2.AverageValueMetricType && src.Target.AverageValue != nil:
		usage, err := fetch()
		if err != nil {
			return proposal{}, err
		}
		var average int64
		p.replicas, average = perPodReplicas(mc.statusReplicas, usage, src.Target.AverageValue.MilliValue(), mc.tolerances)
		status.Current.AverageValue = resource.NewMilliQuantity(average, resource.DecimalSI)
		p.name = fmt.Sprintf("external metric %s(%+v)", src.Metric.Name, src.Metric.Selector)
	default:
		return proposal{}, errors.New("invalid object metric source: neither a value target nor an average value target was set")
	}
	return p, nil
}

// externalProposal computes what an external metric calls for.
func (c *Controller) externalProposal(mc metricContext, src *autoscalingv2.ExternalMetricSource) (proposal, error) {
	name := src.Metric.Name
	if src.Target.AverageValue == nil && src.Target.Value == nil {
		return proposal{}, errors.New("invalid external metric source: neither a value target nor an average value target was set")
	}
	metricSelector, err := metav1.LabelSelectorAsSelector(src.Metric.Selector)
	if err != nil {
		return proposal{}, err
	}
	values, _, err := c.extra.externalMetric(mc.hpa.Namespace, name, metricSelector)
	if err != nil {
		return proposal{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %w", mc.hpa.Namespace, name, src.Metric.Selector, err)
	}
	total := sumCapped(values)
	status := &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: src.Metric.Selector}}
	p := proposal{name: fmt.Sprintf("external metric %s(%+v)", name, src.Metric.Selector),
		status: autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: status}}
	if src.Target.AverageValue != nil {
		var average int64
		p.replicas, average = perPodReplicas(mc.statusReplicas, total, src.Target.AverageValue.MilliValue(), mc.tolerances)
		status.Current.AverageValue = resource.NewMilliQuantity(average, resource.DecimalSI)
		return p, nil
	}
	p.replicas, err = ratioReplicas(mc.specReplicas, float64(total)/float64(src.Target.Value.MilliValue()), mc.tolerances, mc.pods)
	if err != nil {
		return proposal{}, err
	}
	status.Current.Value = resource.NewMilliQuantity(total, resource.DecimalSI)
	return p, nil
}

func (c *Controller) calcInput(mc metricContext, samples podMetrics) calcInput {
	r := c.readiness
	r.now = c.clock.Now()
	return calcInput{pods: mc.pods, metrics: samples, currentReplicas: mc.specReplicas, tolerances: mc.tolerances, readiness: r}
}

// quantity is a resource's milli-value as the resource metrics API shows
// it: memory in binary units, anything else in decimal ones.
func quantity(name corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	if name == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	return *resource.NewMilliQuantity(milli, format)
}
