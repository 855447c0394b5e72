package poddisruptionbudgets

import (
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func pdb(minAvail, maxUnavail *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvail, MaxUnavailable: maxUnavail,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	badPolicy := pdb(ptr.To(intstr.FromInt32(1)), nil)
	badPolicy.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Never"))
	tests := []struct {
		name string
		p    *policyv1.PodDisruptionBudget
		want []string
	}{
		{"min available", pdb(ptr.To(intstr.FromInt32(2)), nil), nil},
		{"max unavailable percent", pdb(nil, ptr.To(intstr.FromString("25%"))), nil},
		{"both", pdb(ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromInt32(1))), []string{"FieldValueInvalid spec"}},
		{"negative", pdb(ptr.To(intstr.FromInt32(-1)), nil), []string{"FieldValueInvalid spec.minAvailable"}},
		{"bad percent", pdb(nil, ptr.To(intstr.FromString("half"))), []string{"FieldValueInvalid spec.maxUnavailable"}},
		{"over 100%", pdb(ptr.To(intstr.FromString("150%")), nil), []string{"FieldValueInvalid spec.minAvailable"}},
		{"bad policy", badPolicy, []string{"FieldValueNotSupported spec.unhealthyPodEvictionPolicy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.p, nil), tt.want...)
		})
	}
}

func TestPrepareAndRow(t *testing.T) {
	r := Resource()
	if !r.HasStatus || r.ShortNames[0] != "pdb" {
		t.Errorf("HasStatus %v, short names %v", r.HasStatus, r.ShortNames)
	}
	p := pdb(ptr.To(intstr.FromString("50%")), nil)
	p.Status.DisruptionsAllowed = 3
	r.PrepareForCreate(p)
	if p.Status.DisruptionsAllowed != 0 {
		t.Error("status not reset on create")
	}
	p.Status.DisruptionsAllowed = 1
	now := time.Now()
	p.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Second))
	row := r.Row(p, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"web", "50%", "N/A", int64(1), "5s"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, row[i], want[i])
		}
	}
}
