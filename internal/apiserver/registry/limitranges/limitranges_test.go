package limitranges

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestDefault(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer,
		Max:  list("cpu", "2", "memory", "1Gi"),
		Min:  list("cpu", "100m", "ephemeral-storage", "1Gi"),
	}}}}
	Resource().Default(lr)
	item := lr.Spec.Limits[0]
	if got := item.Default.Cpu().String(); got != "2" {
		t.Errorf("default cpu = %s, want 2 (from max)", got)
	}
	if got := item.DefaultRequest.Memory().String(); got != "1Gi" {
		t.Errorf("default request memory = %s, want 1Gi (from default)", got)
	}
	if got := item.DefaultRequest.StorageEphemeral().String(); got != "1Gi" {
		t.Errorf("default request ephemeral-storage = %s, want 1Gi (from min)", got)
	}
	if errs := Resource().Validate(lr); len(errs) != 0 {
		t.Errorf("defaulted limit range rejected: %v", errs)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		items []corev1.LimitRangeItem
		want  []string
	}{
		{"min above max", []corev1.LimitRangeItem{{Type: "Container", Min: list("cpu", "2"), Max: list("cpu", "1")}}, []string{"spec.limits[0].min[cpu]"}},
		{"default above max", []corev1.LimitRangeItem{{Type: "Container", Default: list("memory", "2Gi"), Max: list("memory", "1Gi")}}, []string{"spec.limits[0].default[memory]"}},
		{"pod with default", []corev1.LimitRangeItem{{Type: "Pod", Default: list("cpu", "1")}}, []string{"spec.limits[0].default"}},
		{"pvc without storage", []corev1.LimitRangeItem{{Type: "PersistentVolumeClaim"}}, []string{"spec.limits[0].limits"}},
		{"duplicate type", []corev1.LimitRangeItem{{Type: "Pod"}, {Type: "Pod"}}, []string{"spec.limits[1].type"}},
		{"unknown type", []corev1.LimitRangeItem{{Type: "Node"}}, []string{"spec.limits[0].type"}},
		{"ratio below one", []corev1.LimitRangeItem{{Type: "Container", MaxLimitRequestRatio: list("cpu", "500m")}}, []string{"spec.limits[0].maxLimitRequestRatio[cpu]"}},
	}
	for _, tc := range cases {
		var got []string
		for _, e := range Resource().Validate(&corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: tc.items}}) {
			got = append(got, e.Field)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: error fields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNoColumns(t *testing.T) {
	if r := Resource(); r.Columns != nil || r.Row != nil || r.ShortNames[0] != "limits" {
		t.Errorf("limit ranges use the default table: %+v", r)
	}
}
