package csidrivers

import (
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func TestDefault(t *testing.T) {
	d := &storagev1.CSIDriver{}
	Resource().Default(d)
	s := d.Spec
	if !*s.AttachRequired || *s.PodInfoOnMount || *s.StorageCapacity || *s.RequiresRepublish || *s.SELinuxMount {
		t.Errorf("bool defaults: %+v", s)
	}
	if *s.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy || len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("defaults: %v %v", *s.FSGroupPolicy, s.VolumeLifecycleModes)
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	tests := []struct {
		name string
		spec storagev1.CSIDriverSpec
		want []string
	}{
		{"defaults", storagev1.CSIDriverSpec{}, nil},
		{"bad fsGroupPolicy", storagev1.CSIDriverSpec{FSGroupPolicy: ptr.To(storagev1.FSGroupPolicy("Sometimes"))}, []string{"FieldValueNotSupported spec.fsGroupPolicy"}},
		{"bad mode", storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Forever"}}, []string{"FieldValueNotSupported spec.volumeLifecycleModes"}},
		{"short token", storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](60)}}}, []string{"FieldValueInvalid spec.tokenRequests[0].expirationSeconds"}},
		{"duplicate audience", storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "a"}, {Audience: "a"}}}, []string{"FieldValueDuplicate spec.tokenRequests[1].audience"}},
		{"update period", storagev1.CSIDriverSpec{NodeAllocatableUpdatePeriodSeconds: ptr.To[int64](5)}, []string{"FieldValueInvalid spec.nodeAllocatableUpdatePeriodSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, &storagev1.CSIDriver{Spec: tt.spec}, nil), tt.want...)
		})
	}
	old := &storagev1.CSIDriver{}
	r.Default(old)
	changed := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)}}
	registrytest.ExpectErrors(t, registrytest.Validate(r, changed, old), "FieldValueInvalid spec.attachedRequired")
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	r.Default(d)
	row := r.Row(d, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"csi.example.com", true, false, false, "<unset>", false, "Persistent", "60m"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, r.Columns[i].Name, row[i], want[i])
		}
	}
}
