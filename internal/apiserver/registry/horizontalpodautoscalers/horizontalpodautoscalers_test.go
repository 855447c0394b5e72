package horizontalpodautoscalers

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func hpa(min *int32, max int32, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    min, MaxReplicas: max, Metrics: metrics,
		},
	}
}

func cpu(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(percent)}}}
}

func TestDefault(t *testing.T) {
	h := hpa(nil, 5)
	Resource().Default(h)
	if *h.Spec.MinReplicas != 1 {
		t.Errorf("minReplicas = %d", *h.Spec.MinReplicas)
	}
	if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics = %+v", h.Spec.Metrics)
	}
	if h.Spec.Behavior != nil {
		t.Error("behavior defaulted although unset")
	}

	b := hpa(ptr.To[int32](2), 5, cpu(50))
	b.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}
	Resource().Default(b)
	up, down := b.Spec.Behavior.ScaleUp, b.Spec.Behavior.ScaleDown
	if *up.StabilizationWindowSeconds != 0 || *up.SelectPolicy != autoscalingv2.MaxChangePolicySelect || len(up.Policies) != 2 || up.Policies[0].Value != 4 {
		t.Errorf("scaleUp = %+v", up)
	}
	if *down.StabilizationWindowSeconds != 60 || len(down.Policies) != 1 || down.Policies[0].Value != 100 || down.Policies[0].PeriodSeconds != 15 {
		t.Errorf("scaleDown = %+v", down)
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	noRef := hpa(nil, 3, cpu(50))
	noRef.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{}
	two := cpu(50)
	two.Pods = &autoscalingv2.PodsMetricSource{}
	badPolicy := hpa(nil, 3, cpu(50))
	badPolicy.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Nodes", Value: 0, PeriodSeconds: 3600}}}}
	tests := []struct {
		name string
		h    *autoscalingv2.HorizontalPodAutoscaler
		want []string
	}{
		{"valid", hpa(ptr.To[int32](2), 10, cpu(70)), nil},
		{"zero min", hpa(ptr.To[int32](0), 3), []string{"FieldValueInvalid spec.minReplicas"}},
		{"max below min", hpa(ptr.To[int32](5), 3), []string{"FieldValueInvalid spec.maxReplicas"}},
		{"zero max", hpa(nil, 0), []string{"FieldValueInvalid spec.maxReplicas", "FieldValueInvalid spec.maxReplicas"}},
		{"no target", noRef, []string{"FieldValueRequired spec.scaleTargetRef.kind", "FieldValueRequired spec.scaleTargetRef.name"}},
		{"zero utilization", hpa(nil, 3, cpu(0)), []string{"FieldValueInvalid spec.metrics[0].resource.target.averageUtilization"}},
		{"two sources", hpa(nil, 3, two), []string{"FieldValueForbidden spec.metrics[0].pods"}},
		{"missing source", hpa(nil, 3, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType}), []string{"FieldValueRequired spec.metrics[0].pods"}},
		{"bad policy", badPolicy, []string{"FieldValueNotSupported spec.behavior.scaleUp.policies[0].type", "FieldValueInvalid spec.behavior.scaleUp.policies[0].value", "FieldValueInvalid spec.behavior.scaleUp.policies[0].periodSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.h, nil), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.Categories[0] != "all" || r.ShortNames[0] != "hpa" {
		t.Errorf("resource = %+v", r)
	}
	now := time.Now()
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))}}}
	h := hpa(ptr.To[int32](1), 10, cpu(80), pods, cpu(90))
	h.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour * 5))
	h.Status.CurrentReplicas = 3
	h.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](42)}}}}
	row := r.Row(h, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"web", "Deployment/web", "cpu: 42%/80%, <unknown>/10 + 1 more...", "1", int64(10), int64(3), "5h"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
	if row := r.Row(hpa(nil, 1), now); row[2] != "<none>" || row[3] != "<unset>" {
		t.Errorf("bare row = %v", row)
	}
}
