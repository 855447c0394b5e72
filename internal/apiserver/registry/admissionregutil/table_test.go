package admissionregutil

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCells(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{ParamKindCell(nil), "<unset>"},
		{ParamKindCell(&admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}), "v1/ConfigMap"},
		{ParamRefCell(nil), "<unset>"},
		{ParamRefCell(&admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default"}), "default/limits"},
		{ParamRefCell(&admissionregistrationv1.ParamRef{Name: "limits"}), "*/limits"},
		{ParamRefCell(&admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}),
			"&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}"},
		{ParamRefCell(&admissionregistrationv1.ParamRef{}), "<unset>"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("cell = %q, want %q", tt.got, tt.want)
		}
	}
}
