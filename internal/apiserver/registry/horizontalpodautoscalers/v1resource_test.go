package horizontalpodautoscalers

import (
	"reflect"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func TestResourceV1(t *testing.T) {
	r := ResourceV1()
	if r.GroupVersion.String() != "autoscaling/v1" || r.Resource != "horizontalpodautoscalers" || r.Kind != "HorizontalPodAutoscaler" ||
		r.SingularName != "horizontalpodautoscaler" || !r.Namespaced || !r.HasStatus || r.ShortNames[0] != "hpa" || r.Categories[0] != "all" {
		t.Errorf("resource = %+v", r)
	}
	if _, ok := r.New().(*autoscalingv1.HorizontalPodAutoscaler); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*autoscalingv1.HorizontalPodAutoscalerList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
	// Every hook of autoscaling/v2 must run for autoscaling/v1 too.
	v1, v2 := reflect.ValueOf(r), reflect.ValueOf(Resource())
	for i := 0; i < v2.NumField(); i++ {
		if v2.Field(i).Kind() == reflect.Func && !v2.Field(i).IsNil() && v1.Field(i).IsNil() {
			t.Errorf("%s is set for autoscaling/v2 but not for autoscaling/v1", v2.Type().Field(i).Name)
		}
	}
}

func TestV1Default(t *testing.T) {
	tests := []struct {
		name string
		in   *autoscalingv1.HorizontalPodAutoscaler
		want *autoscalingv1.HorizontalPodAutoscaler
	}{{
		name: "min replicas and cpu target",
		in:   v1Of(nil, nil, func(h *autoscalingv1.HorizontalPodAutoscaler) { h.Spec.MinReplicas = nil }),
		want: v1Of(ptr.To[int32](80), nil),
	}, {
		name: "set fields stay",
		in:   v1Of(ptr.To[int32](50), map[string]string{"team": "web"}, func(h *autoscalingv1.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](3) }),
		want: v1Of(ptr.To[int32](50), map[string]string{"team": "web"}, func(h *autoscalingv1.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](3) }),
	}, {
		name: "behavior",
		in:   v1Of(ptr.To[int32](50), map[string]string{behaviorAnnotation: `{"ScaleDown":{"StabilizationWindowSeconds":60}}`}),
		want: v1Of(ptr.To[int32](50), map[string]string{behaviorAnnotation: `{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max",` +
			`"Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null},` +
			`"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}`}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ResourceV1().Default(tt.in)
			expectSame(t, "defaulted", tt.in, tt.want)
		})
	}
}

func TestV1Validate(t *testing.T) {
	tests := []struct {
		name string
		h    *autoscalingv1.HorizontalPodAutoscaler
		want []string
	}{
		{"valid", v1Of(ptr.To[int32](70), nil), nil},
		{"no target: 80%", v1Of(nil, nil), nil},
		{"zero cpu", v1Of(ptr.To[int32](0), nil), []string{"FieldValueInvalid spec.metrics[0].resource.target.averageUtilization"}},
		{"zero min", v1Of(nil, nil, func(h *autoscalingv1.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](0) }), []string{"FieldValueInvalid spec.minReplicas"}},
		{"annotated metric", v1Of(ptr.To[int32](50), map[string]string{metricsAnnotation: `[{"type":"Pods","pods":{"metricName":"qps"}}]`}),
			[]string{"FieldValueInvalid spec.metrics[0].pods.target.averageValue"}},
		{"annotated behavior", v1Of(ptr.To[int32](50), map[string]string{behaviorAnnotation: `{"ScaleUp":{"Policies":[{"Type":"Pods","Value":0,"PeriodSeconds":15}]}}`}),
			[]string{"FieldValueInvalid spec.behavior.scaleUp.policies[0].value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(ResourceV1(), tt.h, nil), tt.want...)
		})
	}
}

func TestV1PrepareForCreate(t *testing.T) {
	h, err := FromV2(rich)
	if err != nil {
		t.Fatal(err)
	}
	ResourceV1().PrepareForCreate(h)
	want := v1Of(ptr.To[int32](50), map[string]string{"team": "web", metricsAnnotation: richAnnotations[metricsAnnotation], behaviorAnnotation: richAnnotations[behaviorAnnotation]})
	expectSame(t, "prepared", h, want)
}

func TestV1Row(t *testing.T) {
	now := time.Now()
	h, err := FromV2(rich)
	if err != nil {
		t.Fatal(err)
	}
	h.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Hour))
	r := ResourceV1()
	row := r.Row(h, now)
	registrytest.CheckTable(t, r, row)
	// Through v1 the CPU target moves last, so current metrics, matched by
	// position, no longer line up, as upstream's for an object that went
	// through autoscaling/v1.
	want := []interface{}{"web", "Deployment/web", "<unknown>/10, <unknown>/2k + 3 more...", "1", int64(10), int64(2), "5h"}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	if row := r.Row(v1Of(nil, nil), now); row[2] != "cpu: <unknown>/80%" {
		t.Errorf("row without target = %#v", row)
	}
}
