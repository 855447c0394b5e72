package priorityclasses

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func class(name string, value int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

func TestDefault(t *testing.T) {
	pc := class("high", 1000)
	Resource().Default(pc)
	if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy = %v", pc.PreemptionPolicy)
	}
	never := class("low", 1)
	never.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	Resource().Default(never)
	if *never.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("preemptionPolicy overwritten: %v", *never.PreemptionPolicy)
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	bad := class("x", 1)
	bad.PreemptionPolicy = ptr.To(corev1.PreemptionPolicy("Sometimes"))
	defaultSystem := class("system-node-critical", 2000001000)
	defaultSystem.GlobalDefault = true
	tests := []struct {
		name string
		pc   *schedulingv1.PriorityClass
		want []string
	}{
		{"user class", class("high", 1000000), nil},
		{"too high", class("high", 1000000001), []string{"FieldValueForbidden value"}},
		{"system class", class("system-cluster-critical", 2000000000), nil},
		{"unknown system class", class("system-foo", 10), []string{"FieldValueForbidden metadata.name"}},
		{"wrong system value", class("system-node-critical", 10), []string{"FieldValueForbidden metadata.name"}},
		{"system class as default", defaultSystem, []string{"FieldValueForbidden metadata.name"}},
		{"bad policy", bad, []string{"FieldValueNotSupported preemptionPolicy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.pc, nil), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	r := Resource()
	old := class("high", 100)
	r.Default(old)
	errs := registrytest.Validate(r, class("high", 200), old)
	registrytest.ExpectErrors(t, errs, "FieldValueForbidden value")
	registrytest.ExpectDetail(t, errs, "value", "may not be changed in an update.")

	changed := class("high", 100)
	changed.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	registrytest.ExpectErrors(t, registrytest.Validate(r, changed, old), "FieldValueInvalid preemptionPolicy")

	desc := class("high", 100)
	desc.Description = "new words"
	registrytest.ExpectErrors(t, registrytest.Validate(r, desc, old))
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	pc := class("system-node-critical", 2000001000)
	pc.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	r.Default(pc)
	row := r.Row(pc, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"system-node-critical", int64(2000001000), false, "10m", "PreemptLowerPriority"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, row[i], want[i])
		}
	}
}
