package horizontalpodautoscalers

import (
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
)

func q(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

// v2Of is the autoscaler "web" in autoscaling/v2 with the given metrics,
// changed by each of edits.
func v2Of(metrics []autoscalingv2.MetricSpec, edits ...func(*autoscalingv2.HorizontalPodAutoscaler)) *autoscalingv2.HorizontalPodAutoscaler {
	h := hpa(ptr.To[int32](1), 10, metrics...)
	h.TypeMeta = metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"}
	h.Namespace = "default"
	for _, edit := range edits {
		edit(h)
	}
	return h
}

// v1Of is the autoscaler "web" in autoscaling/v1 with the given CPU target
// and annotations, changed by each of edits.
func v1Of(targetCPU *int32, annotations map[string]string, edits ...func(*autoscalingv1.HorizontalPodAutoscaler)) *autoscalingv1.HorizontalPodAutoscaler {
	h := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: annotations},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10, TargetCPUUtilizationPercentage: targetCPU,
		},
	}
	for _, edit := range edits {
		edit(h)
	}
	return h
}

func pods(name, average string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q(average)}}}
}

func object(target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
		Metric:          autoscalingv2.MetricIdentifier{Name: "hits"}, Target: target}}
}

func external(target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"q": "jobs"}}}, Target: target}}
}

func containerResource(target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: corev1.ResourceMemory, Container: "app", Target: target}}
}

func resourceAverage(name corev1.ResourceName, average string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: name, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q(average)}}}
}

func value(v string) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q(v)}
}

func average(v string) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q(v)}
}

func cpuNow(utilization int32, average *resource.Quantity) autoscalingv2.MetricStatus {
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(utilization), AverageValue: average}}}
}

var (
	transition = metav1.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	// rich has every metric kind, current metrics, a behavior, conditions,
	// an unrelated annotation and a stale round-trip one.
	rich = v2Of([]autoscalingv2.MetricSpec{
		cpu(50), pods("qps", "10"), object(value("2k")), external(average("30")),
		containerResource(autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}),
	}, func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Annotations = map[string]string{"team": "web", scaleDownToleranceAnnotation: "0.2"}
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: scaleUpDefaults(),
			ScaleDown: &autoscalingv2.HPAScalingRules{
				Policies:  []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}},
				Tolerance: q("50m"),
			},
		}
		h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: ptr.To[int64](3), LastScaleTime: &transition, CurrentReplicas: 2, DesiredReplicas: 3,
			CurrentMetrics: []autoscalingv2.MetricStatus{cpuNow(40, q("200m")), {Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
				Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Current: autoscalingv2.MetricValueStatus{AverageValue: q("12")}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, LastTransitionTime: transition, Reason: "ReadyForNewScale", Message: "recommended size matches current size"},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: "FailedGetResourceMetric", Message: "x", ObservedGeneration: ptr.To[int64](3)},
			},
		}
	})
	// richAnnotations are the annotations upstream gives rich in autoscaling/v1.
	richAnnotations = map[string]string{
		"team": "web",
		metricsAnnotation: `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},` +
			`{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"metricName":"hits","targetValue":"2k"}},` +
			`{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"q":"jobs"}},"targetAverageValue":"30"}},` +
			`{"type":"ContainerResource","containerResource":{"name":"memory","targetAverageUtilization":60,"container":"app"}}]`,
		currentMetricsAnnotation: `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"200m"}},` +
			`{"type":"Pods","pods":{"metricName":"qps","currentAverageValue":"12"}}]`,
		behaviorAnnotation: `{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null},` +
			`"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":null,"Policies":[{"Type":"Percent","Value":10,"PeriodSeconds":60}],"Tolerance":"50m"}}`,
		conditionsAnnotation: `[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-01-02T03:04:05Z","reason":"ReadyForNewScale","message":"recommended size matches current size"},` +
			`{"type":"ScalingActive","status":"False","lastTransitionTime":null,"reason":"FailedGetResourceMetric","message":"x","observedGeneration":3}]`,
	}
)

func expectSame(t *testing.T, what string, got, want interface{}) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s differs (-want +got):\n%s", what, diff.Diff(want, got))
	}
}

func TestFromV2Annotations(t *testing.T) {
	got, err := FromV2(rich)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range richAnnotations {
		if got.Annotations[key] != want {
			t.Errorf("annotation %s:\n got  %s\n want %s", key, got.Annotations[key], want)
		}
	}
	for key := range got.Annotations {
		if _, ok := richAnnotations[key]; !ok {
			t.Errorf("unexpected annotation %s: %s", key, got.Annotations[key])
		}
	}
	if *got.Spec.TargetCPUUtilizationPercentage != 50 || *got.Status.CurrentCPUUtilizationPercentage != 40 {
		t.Errorf("cpu target %d, current %d", *got.Spec.TargetCPUUtilizationPercentage, *got.Status.CurrentCPUUtilizationPercentage)
	}
}

// v2RoundTrip is an autoscaler in autoscaling/v2, what upstream makes of it
// in autoscaling/v1 and what that gives back in autoscaling/v2.
type v2RoundTrip struct {
	name     string
	in       *autoscalingv2.HorizontalPodAutoscaler
	wantV1   *autoscalingv1.HorizontalPodAutoscaler
	wantBack *autoscalingv2.HorizontalPodAutoscaler
}

func v2RoundTrips() []v2RoundTrip {
	withStatus := func(s autoscalingv2.HorizontalPodAutoscalerStatus) func(*autoscalingv2.HorizontalPodAutoscaler) {
		return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status = s }
	}
	others := []autoscalingv2.MetricSpec{
		pods("qps", "10"), object(average("2")), external(value("100")),
		containerResource(average("1Gi")), resourceAverage(corev1.ResourceCPU, "500m"),
	}
	return []v2RoundTrip{{
		name:     "only cpu",
		in:       v2Of([]autoscalingv2.MetricSpec{cpu(70)}),
		wantV1:   v1Of(ptr.To[int32](70), nil),
		wantBack: v2Of([]autoscalingv2.MetricSpec{cpu(70)}),
	}, {
		// The CPU utilization target comes back after the others; a CPU
		// average value is not the v1 CPU target.
		name: "cpu and other metrics",
		in:   v2Of(append([]autoscalingv2.MetricSpec{cpu(50)}, others...)),
		wantV1: v1Of(ptr.To[int32](50), map[string]string{metricsAnnotation: `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},` +
			`{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"metricName":"hits","targetValue":"0","averageValue":"2"}},` +
			`{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"q":"jobs"}},"targetValue":"100"}},` +
			`{"type":"ContainerResource","containerResource":{"name":"memory","targetAverageValue":"1Gi","container":"app"}},` +
			`{"type":"Resource","resource":{"name":"cpu","targetAverageValue":"500m"}}]`}),
		wantBack: v2Of(append(others, cpu(50))),
	}, {
		name: "only other metrics",
		in:   v2Of([]autoscalingv2.MetricSpec{external(average("30"))}),
		wantV1: v1Of(nil, map[string]string{
			metricsAnnotation: `[{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"q":"jobs"}},"targetAverageValue":"30"}}]`}),
		wantBack: v2Of([]autoscalingv2.MetricSpec{external(average("30"))}),
	}, {
		name:     "second cpu utilization is lost",
		in:       v2Of([]autoscalingv2.MetricSpec{cpu(50), cpu(60)}),
		wantV1:   v1Of(ptr.To[int32](50), nil),
		wantBack: v2Of([]autoscalingv2.MetricSpec{cpu(50)}),
	}, {
		name:     "no metrics",
		in:       v2Of(nil),
		wantV1:   v1Of(nil, nil),
		wantBack: v2Of([]autoscalingv2.MetricSpec{cpu(80)}),
	}, {
		name: "everything",
		in:   rich,
		wantV1: v1Of(ptr.To[int32](50), richAnnotations, func(h *autoscalingv1.HorizontalPodAutoscaler) {
			h.Status = autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: ptr.To[int64](3), LastScaleTime: &transition,
				CurrentReplicas: 2, DesiredReplicas: 3, CurrentCPUUtilizationPercentage: ptr.To[int32](40)}
		}),
		wantBack: v2Of(append(rich.DeepCopy().Spec.Metrics[1:], cpu(50)), func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Annotations = map[string]string{"team": "web"}
			h.Spec.Behavior = rich.Spec.Behavior.DeepCopy()
			h.Status = *rich.Status.DeepCopy()
		}),
	}, {
		// v1 cannot leave out a current average value: none becomes zero.
		name: "current cpu without average",
		in:   v2Of([]autoscalingv2.MetricSpec{cpu(50)}, withStatus(autoscalingv2.HorizontalPodAutoscalerStatus{CurrentMetrics: []autoscalingv2.MetricStatus{cpuNow(40, nil)}})),
		wantV1: v1Of(ptr.To[int32](50), map[string]string{
			currentMetricsAnnotation: `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"0"}}]`,
		}, func(h *autoscalingv1.HorizontalPodAutoscaler) {
			h.Status.CurrentCPUUtilizationPercentage = ptr.To[int32](40)
		}),
		wantBack: v2Of([]autoscalingv2.MetricSpec{cpu(50)}, withStatus(autoscalingv2.HorizontalPodAutoscalerStatus{CurrentMetrics: []autoscalingv2.MetricStatus{cpuNow(40, q("0"))}})),
	}, {
		name: "stale annotations",
		in: v2Of([]autoscalingv2.MetricSpec{cpu(50)}, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Annotations = map[string]string{"team": "web", metricsAnnotation: "[]", conditionsAnnotation: "[]", scaleUpToleranceAnnotation: "0.1"}
		}),
		wantV1: v1Of(ptr.To[int32](50), map[string]string{"team": "web"}),
		wantBack: v2Of([]autoscalingv2.MetricSpec{cpu(50)}, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Annotations = map[string]string{"team": "web"}
		}),
	}}
}

func TestV2RoundTrip(t *testing.T) {
	for _, tt := range v2RoundTrips() {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			v1, err := FromV2(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			expectSame(t, "v1", v1, tt.wantV1)
			expectSame(t, "input", tt.in, before)
			v1Before := v1.DeepCopy()
			back, err := ToV2(v1)
			if err != nil {
				t.Fatal(err)
			}
			expectSame(t, "v2 back", back, tt.wantBack)
			expectSame(t, "v1 input", v1, v1Before)
		})
	}
}

// v1RoundTrip is an autoscaler in autoscaling/v1, what upstream makes of it
// in autoscaling/v2 and what that gives back in autoscaling/v1.
type v1RoundTrip struct {
	name     string
	in       *autoscalingv1.HorizontalPodAutoscaler
	wantV2   *autoscalingv2.HorizontalPodAutoscaler
	wantBack *autoscalingv1.HorizontalPodAutoscaler
}

func v1RoundTrips() []v1RoundTrip {
	annotated := map[string]string{
		"team":             "web",
		metricsAnnotation:  `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]`,
		behaviorAnnotation: `{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Min","Policies":null,"Tolerance":"20m"}}`,
		currentMetricsAnnotation: `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"200m"}},` +
			`{"type":"Pods","pods":{"metricName":"qps","currentAverageValue":"12"}}]`,
		conditionsAnnotation: `[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-01-02T03:04:05Z","reason":"ReadyForNewScale"}]`,
	}
	annotatedStatus := func(h *autoscalingv1.HorizontalPodAutoscaler) {
		h.Status = autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2, CurrentCPUUtilizationPercentage: ptr.To[int32](40)}
	}
	return []v1RoundTrip{{
		name:     "only cpu",
		in:       v1Of(ptr.To[int32](70), nil),
		wantV2:   v2Of([]autoscalingv2.MetricSpec{cpu(70)}),
		wantBack: v1Of(ptr.To[int32](70), nil),
	}, {
		name:     "no metrics targets 80% cpu",
		in:       v1Of(nil, nil),
		wantV2:   v2Of([]autoscalingv2.MetricSpec{cpu(80)}),
		wantBack: v1Of(ptr.To[int32](80), nil),
	}, {
		name: "annotations",
		in:   v1Of(ptr.To[int32](50), annotated, annotatedStatus),
		wantV2: v2Of([]autoscalingv2.MetricSpec{pods("qps", "10"), cpu(50)}, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Annotations = map[string]string{"team": "web"}
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](60), SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect), Tolerance: q("20m")}}
			h.Status = *rich.Status.DeepCopy()
			h.Status.ObservedGeneration, h.Status.LastScaleTime, h.Status.CurrentReplicas, h.Status.DesiredReplicas = nil, nil, 2, 2
			h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, LastTransitionTime: transition, Reason: "ReadyForNewScale"}}
		}),
		wantBack: v1Of(ptr.To[int32](50), annotated, annotatedStatus),
	}, {
		// Upstream decodes the internal behavior, whose keys match in any case.
		name: "behavior in v2 spelling",
		in: v1Of(ptr.To[int32](50), map[string]string{
			behaviorAnnotation: `{"scaleUp":{"policies":[{"type":"Pods","value":2,"periodSeconds":30}]}}`}),
		wantV2: v2Of([]autoscalingv2.MetricSpec{cpu(50)}, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Annotations = map[string]string{}
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 30}}}}
		}),
		wantBack: v1Of(ptr.To[int32](50), map[string]string{
			behaviorAnnotation: `{"ScaleUp":{"StabilizationWindowSeconds":null,"SelectPolicy":null,"Policies":[{"Type":"Pods","Value":2,"PeriodSeconds":30}],"Tolerance":null},"ScaleDown":null}`}),
	}, {
		name: "annotations that do not decode are dropped",
		in: v1Of(nil, map[string]string{metricsAnnotation: "pods", behaviorAnnotation: "{}", currentMetricsAnnotation: "[",
			conditionsAnnotation: `{"type":"AbleToScale"}`, scaleUpToleranceAnnotation: "0.1"}),
		wantV2:   v2Of([]autoscalingv2.MetricSpec{cpu(80)}, func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Annotations = map[string]string{} }),
		wantBack: v1Of(ptr.To[int32](80), map[string]string{}),
	}, {
		name: "current cpu only",
		in: v1Of(ptr.To[int32](50), nil, func(h *autoscalingv1.HorizontalPodAutoscaler) {
			h.Status.CurrentCPUUtilizationPercentage = ptr.To[int32](40)
		}),
		wantV2: v2Of([]autoscalingv2.MetricSpec{cpu(50)}, func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Status.CurrentMetrics = []autoscalingv2.MetricStatus{cpuNow(40, nil)}
		}),
		wantBack: v1Of(ptr.To[int32](50), map[string]string{
			currentMetricsAnnotation: `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"0"}}]`,
		}, func(h *autoscalingv1.HorizontalPodAutoscaler) {
			h.Status.CurrentCPUUtilizationPercentage = ptr.To[int32](40)
		}),
	}}
}

func TestV1RoundTrip(t *testing.T) {
	for _, tt := range v1RoundTrips() {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			v2, err := ToV2(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			expectSame(t, "v2", v2, tt.wantV2)
			expectSame(t, "input", tt.in, before)
			back, err := FromV2(v2)
			if err != nil {
				t.Fatal(err)
			}
			expectSame(t, "v1 back", back, tt.wantBack)
		})
	}
}
