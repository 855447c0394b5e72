package workloadutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch/internal/apiserver/registry/registrytest"
)

func TestContainerCells(t *testing.T) {
	names, images := ContainerCells([]corev1.Container{{Name: "a", Image: "x:1"}, {Name: "b", Image: "y"}})
	if names != "a,b" || images != "x:1,y" {
		t.Errorf("cells = %q %q", names, images)
	}
	if names, images := ContainerCells(nil); names != "" || images != "" {
		t.Errorf("empty cells = %q %q", names, images)
	}
}

func TestSelectors(t *testing.T) {
	p := field.NewPath("spec", "selector")
	template := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	tests := []struct {
		name string
		sel  *metav1.LabelSelector
		want []string
	}{
		{"matching", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, nil},
		{"missing", nil, []string{"FieldValueRequired spec.selector", "FieldValueInvalid spec.template.metadata.labels"}},
		{"empty", &metav1.LabelSelector{}, []string{"FieldValueInvalid spec.selector"}},
		{"other labels", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, []string{"FieldValueInvalid spec.template.metadata.labels"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, errs := ValidateSelector(tt.sel, "deployment", p)
			errs = append(errs, ValidateTemplateLabels(sel, template, field.NewPath("spec", "template"))...)
			registrytest.ExpectErrors(t, errs, tt.want...)
		})
	}
	if s := SelectorString(&metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}}); s != "a=1,b=2" {
		t.Errorf("selector string = %q", s)
	}
}

func TestIntOrPercent(t *testing.T) {
	p := field.NewPath("x")
	tests := []struct {
		v     intstr.IntOrString
		value int
		want  []string
	}{
		{intstr.FromInt32(3), 3, nil},
		{intstr.FromString("25%"), 25, nil},
		{intstr.FromString("150%"), 150, []string{"FieldValueInvalid x"}},
		{intstr.FromInt32(-1), -1, []string{"FieldValueInvalid x"}},
		{intstr.FromString("25"), 25, []string{"FieldValueInvalid x"}}, // not a percent, read as a number as upstream does
	}
	for _, tt := range tests {
		errs := append(ValidateIntOrPercent(tt.v, p), NotMoreThan100Percent(tt.v, p)...)
		registrytest.ExpectErrors(t, errs, tt.want...)
		if got := IntOrPercentValue(tt.v); got != tt.value {
			t.Errorf("%s: value %d, want %d", tt.v.String(), got, tt.value)
		}
	}
}

func TestValidateRestartAlways(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, ActiveDeadlineSeconds: new(int64)}}
	errs := ValidateRestartAlways(tmpl, "DaemonSet", field.NewPath("spec", "template"))
	registrytest.ExpectErrors(t, errs, "FieldValueNotSupported spec.template.spec.restartPolicy", "FieldValueForbidden spec.template.spec.activeDeadlineSeconds")
	registrytest.ExpectDetail(t, errs, "spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in DaemonSet is not Supported")
}
