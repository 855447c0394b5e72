package localpath

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNewVolume(t *testing.T) {
	wffc := ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	claim := func(edit func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Mi")}}}}
		if edit != nil {
			edit(c)
		}
		return c
	}
	class := func(params map[string]string, mode *storagev1.VolumeBindingMode) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lp"}, Parameters: params, VolumeBindingMode: mode}
	}
	for _, tc := range []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim
		class    *storagev1.StorageClass
		wantPath string // or, when it starts with "!", the error's end
	}{
		{"default root", claim(nil), class(nil, wffc), "/data/pvc-u1_ns_c"},
		{"class path", claim(nil), class(map[string]string{"path": "/mnt/disk"}, wffc), "/mnt/disk/pvc-u1_ns_c"},
		{"relative class path", claim(nil), class(map[string]string{"path": "disk"}, wffc), `!parameter path="disk" is not an absolute, clean path`},
		{"unknown parameter", claim(nil), class(map[string]string{"type": "ssd"}, wffc), `!has the parameter "type": the only one is "path"`},
		{"immediate", claim(nil), class(nil, ptr.To(storagev1.VolumeBindingImmediate)), "!so that the volume is made on its pod's node"},
		{"block", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }), class(nil, wffc),
			"!volumeMode Block is not supported (only Filesystem)"},
		{"shared access", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), class(nil, wffc), "!access mode ReadWriteMany is not supported (only ReadWriteOnce and ReadWriteOncePod: the volume is on one node)"},
		{"selector", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = &metav1.LabelSelector{} }), class(nil, wffc), "!claim Selector is not supported"},
		{"data source", claim(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "x"}
		}), class(nil, wffc), "!volumes cannot be cloned or restored from a data source"},
		{"no size", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil }), class(nil, wffc), "!the claim requests no storage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv, err := newVolume(tc.claim, tc.class, node, "/data")
			if want, ok := strings.CutPrefix(tc.wantPath, "!"); ok {
				if !errors.Is(err, errUnfit) || !strings.HasSuffix(err.Error(), want) {
					t.Errorf("error %v, want errUnfit ending %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			size := pv.Spec.Capacity[corev1.ResourceStorage]
			if pv.Spec.Local.Path != tc.wantPath || size.String() != "5Mi" || pv.Spec.AccessModes[0] != corev1.ReadWriteOncePod ||
				pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "n1" ||
				pv.Spec.ClaimRef.UID != "u1" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
				t.Errorf("volume %+v", pv.Spec)
			}
		})
	}
}
