package persistentvolumes

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hostPathPV() *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/pv1"}},
		},
	}
	Resource().Default(pv)
	return pv
}

func TestDefaultAndCreate(t *testing.T) {
	fixed := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now = func() metav1.Time { return fixed }
	defer func() { now = metav1.Now }()

	pv := hostPathPV()
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("spec = %+v", pv.Spec)
	}
	if *pv.Spec.HostPath.Type != corev1.HostPathUnset {
		t.Errorf("hostPath type = %q", *pv.Spec.HostPath.Type)
	}
	pv.Status.Phase = corev1.VolumeBound
	Resource().PrepareForCreate(pv)
	if pv.Status.Phase != corev1.VolumePending || !pv.Status.LastPhaseTransitionTime.Equal(&fixed) {
		t.Errorf("status = %+v", pv.Status)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []string
	}{
		{"valid", func(*corev1.PersistentVolume) {}, nil},
		{"no capacity", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil }, []string{"spec.capacity"}},
		{"no access modes", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil }, []string{"spec.accessModes"}},
		{"no source", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath = nil }, []string{"spec"}},
		{"two sources", func(pv *corev1.PersistentVolume) {
			pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
		}, []string{"spec.nfs"}},
		{"local without affinity", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath = nil
			pv.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disk1"}
		}, []string{"spec.nodeAffinity"}},
		{"bad reclaim", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" }, []string{"spec.persistentVolumeReclaimPolicy"}},
	}
	for _, tc := range cases {
		pv := hostPathPV()
		tc.mutate(pv)
		var got []string
		for _, e := range Resource().Validate(pv) {
			got = append(got, e.Field)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: error fields = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidateUpdate(t *testing.T) {
	old := hostPathPV()
	pv := old.DeepCopy()
	pv.Spec.HostPath.Path = "/elsewhere"
	if errs := Resource().ValidateUpdate(pv, old); len(errs) != 1 || errs[0].Field != "spec.persistentvolumesource" {
		t.Errorf("errors = %v", errs)
	}
	pv = old.DeepCopy()
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "claim"}
	if errs := Resource().ValidateUpdate(pv, old); len(errs) != 0 {
		t.Errorf("binding rejected: %v", errs)
	}
}

func TestRow(t *testing.T) {
	n := time.Now()
	pv := hostPathPV()
	pv.CreationTimestamp = metav1.NewTime(n.Add(-time.Minute))
	pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce}
	pv.Spec.StorageClassName = "local-path"
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
	pv.Status.Phase = corev1.VolumeBound
	want := []interface{}{"pv1", "1Gi", "RWO,RWX", "Retain", "Bound", "default/data", "local-path", "<unset>", "", "60s", "Filesystem"}
	if got := Resource().Row(pv, n); !reflect.DeepEqual(got, want) {
		t.Errorf("row = %v\nwant  %v", got, want)
	}
}
