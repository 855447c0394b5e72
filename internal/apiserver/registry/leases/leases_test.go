package leases

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name string
		spec coordinationv1.LeaseSpec
		want []string
	}{
		{"empty", coordinationv1.LeaseSpec{}, nil},
		{"typical", coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1"), LeaseDurationSeconds: ptr.To[int32](40)}, nil},
		{"zero duration", coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}, []string{"FieldValueInvalid spec.leaseDurationSeconds"}},
		{"negative transitions", coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](-1)}, []string{"FieldValueInvalid spec.leaseTransitions"}},
		{"known strategy", coordinationv1.LeaseSpec{Strategy: ptr.To(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr.To("a")}, nil},
		{"unknown strategy", coordinationv1.LeaseSpec{Strategy: ptr.To(coordinationv1.CoordinatedLeaseStrategy("Newest"))}, []string{"FieldValueNotSupported spec.strategy"}},
		{"prefixed strategy", coordinationv1.LeaseSpec{Strategy: ptr.To(coordinationv1.CoordinatedLeaseStrategy("example.com/mine"))}, nil},
		{"holder without strategy", coordinationv1.LeaseSpec{PreferredHolder: ptr.To("a")}, []string{"FieldValueForbidden spec.preferredHolder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, &coordinationv1.Lease{Spec: tt.spec}, nil), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: metav1.NewTime(now.Add(-48 * time.Hour))}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1")}}
	row := r.Row(l, now)
	registrytest.CheckTable(t, r, row)
	if row[0] != "node-1" || row[1] != "node-1" || row[2] != "2d" {
		t.Errorf("row = %v", row)
	}
	if row := r.Row(&coordinationv1.Lease{}, now); row[1] != "" {
		t.Errorf("no holder: %v", row)
	}
}
