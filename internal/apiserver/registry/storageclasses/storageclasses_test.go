package storageclasses

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func class(provisioner string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}, Provisioner: provisioner}
}

func TestDefault(t *testing.T) {
	sc := class("rancher.io/local-path")
	Resource().Default(sc)
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("defaults: %v %v", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	recycle := class("a.io/b")
	recycle.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRecycle)
	badMode := class("a.io/b")
	badMode.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later"))
	topo := class("a.io/b")
	topo.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone"}}}}
	tests := []struct {
		name string
		sc   *storagev1.StorageClass
		want []string
	}{
		{"valid", class("rancher.io/local-path"), nil},
		{"upper case provisioner", class("Example.COM/Driver"), nil},
		{"no provisioner", class(""), []string{"FieldValueRequired provisioner"}},
		{"bad provisioner", class("a b"), []string{"FieldValueInvalid provisioner"}},
		{"recycle", recycle, []string{"FieldValueNotSupported reclaimPolicy"}},
		{"bad binding mode", badMode, []string{"FieldValueNotSupported volumeBindingMode"}},
		{"topology without values", topo, []string{"FieldValueRequired allowedTopologies[0].matchLabelExpressions[0].values"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.sc, nil), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	r := Resource()
	old := class("a.io/b")
	r.Default(old)
	changed := class("a.io/c")
	changed.Parameters = map[string]string{"x": "y"}
	changed.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain)
	changed.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	registrytest.ExpectErrors(t, registrytest.Validate(r, changed, old),
		"FieldValueForbidden parameters", "FieldValueForbidden provisioner", "FieldValueForbidden reclaimPolicy", "FieldValueInvalid volumeBindingMode")

	expand := class("a.io/b")
	expand.AllowVolumeExpansion = ptr.To(true)
	registrytest.ExpectErrors(t, registrytest.Validate(r, expand, old))
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := class("rancher.io/local-path")
	sc.Annotations = map[string]string{DefaultAnnotation: "true"}
	sc.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Minute))
	sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	r.Default(sc)
	row := r.Row(sc, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"local-path (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer", false, "5m"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, row[i], want[i])
		}
	}
}
