package localpath

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDir(t *testing.T) {
	pv := func(by string, local bool, path string) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": by}}}
		if local {
			v.Spec.Local = &corev1.LocalVolumeSource{Path: path}
		} else {
			v.Spec.HostPath = &corev1.HostPathVolumeSource{Path: path}
		}
		return v
	}
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		ok   bool
	}{
		{"ours", pv(Provisioner, true, "/var/lib/orch/storage/pvc-1_ns_c"), true},
		{"another provisioner", pv("rancher.io/local-path", true, "/var/lib/orch/storage/pvc-1_ns_c"), false},
		{"hostPath", pv(Provisioner, false, "/var/lib/orch/storage/pvc-1_ns_c"), false},
		{"root", pv(Provisioner, true, "/"), false},
		{"another volume's directory", pv(Provisioner, true, "/var/lib/orch/storage/pvc-2_ns_c"), false},
		{"a parent", pv(Provisioner, true, "/var/lib/orch/storage/pvc-1_ns_c/.."), false},
		{"relative", pv(Provisioner, true, "storage/pvc-1_ns_c"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := Dir(tc.pv)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrNotLocalPath)) {
				t.Errorf("Dir = %q, %v; want ok %v", dir, err, tc.ok)
			}
		})
	}
}

func TestReclaimable(t *testing.T) {
	pv := func(finalizer bool, policy corev1.PersistentVolumeReclaimPolicy, phase corev1.PersistentVolumePhase, deleted bool) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy}, Status: corev1.PersistentVolumeStatus{Phase: phase}}
		if finalizer {
			v.Finalizers = []string{Finalizer}
		}
		if deleted {
			v.DeletionTimestamp = &metav1.Time{}
		}
		return v
	}
	del, keep := corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		want bool
	}{
		{"released", pv(true, del, corev1.VolumeReleased, false), true},
		{"bound", pv(true, del, corev1.VolumeBound, false), false},
		{"bound and deleted", pv(true, del, corev1.VolumeBound, true), false},
		{"available and deleted", pv(true, del, corev1.VolumeAvailable, true), true},
		{"policy changed to Retain", pv(true, keep, corev1.VolumeReleased, false), false},
		{"no finalizer", pv(false, del, corev1.VolumeReleased, false), false},
	} {
		if got := Reclaimable(tc.pv); got != tc.want {
			t.Errorf("%s: Reclaimable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
