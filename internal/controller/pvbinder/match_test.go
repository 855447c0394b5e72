package pvbinder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type pvOpt func(*corev1.PersistentVolume)

func pv(name, size string, opts ...pvOpt) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem),
	}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
	for _, o := range opts {
		o(v)
	}
	return v
}

func class(c string) pvOpt { return func(v *corev1.PersistentVolume) { v.Spec.StorageClassName = c } }
func modes(m ...corev1.PersistentVolumeAccessMode) pvOpt {
	return func(v *corev1.PersistentVolume) { v.Spec.AccessModes = m }
}
func block(v *corev1.PersistentVolume)    { v.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }
func released(v *corev1.PersistentVolume) { v.Status.Phase = corev1.VolumeReleased }
func labelled(v *corev1.PersistentVolume) { v.Labels = map[string]string{"tier": "fast"} }
func claimedBy(ns, name string, uid string) pvOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: types.UID(uid)}
	}
}

func claim(size string, mutate ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "claim-uid"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(""), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem),
		Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func TestBestVolume(t *testing.T) {
	tests := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		pvs   []*corev1.PersistentVolume
		wait  bool
		want  string
	}{
		{name: "smallest that fits", claim: claim("2Gi"), pvs: []*corev1.PersistentVolume{pv("big", "10Gi"), pv("tiny", "1Gi"), pv("fit", "3Gi")}, want: "fit"},
		{name: "nothing big enough", claim: claim("20Gi"), pvs: []*corev1.PersistentVolume{pv("big", "10Gi")}},
		{name: "storage class must match", claim: claim("1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("fast") }),
			pvs: []*corev1.PersistentVolume{pv("plain", "1Gi"), pv("fast", "5Gi", class("fast"))}, want: "fast"},
		{name: "access modes must be offered, fewest first", claim: claim("1Gi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), pvs: []*corev1.PersistentVolume{pv("rwo", "1Gi"), pv("all", "1Gi", modes(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany)),
			pv("rwx", "5Gi", modes(corev1.ReadWriteMany))}, want: "rwx"},
		{name: "volume mode must match", claim: claim("1Gi"), pvs: []*corev1.PersistentVolume{pv("raw", "1Gi", block), pv("fs", "2Gi")}, want: "fs"},
		{name: "selector must match", claim: claim("1Gi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fast"}}
		}), pvs: []*corev1.PersistentVolume{pv("any", "1Gi"), pv("fast", "4Gi", labelled)}, want: "fast"},
		{name: "only available volumes", claim: claim("1Gi"), pvs: []*corev1.PersistentVolume{pv("old", "1Gi", released), pv("taken", "1Gi", claimedBy("ns", "other", "x"))}},
		{name: "pre-bound volume wins over a better fit", claim: claim("1Gi"),
			pvs: []*corev1.PersistentVolume{pv("fit", "1Gi"), pv("reserved", "8Gi", claimedBy("ns", "data", ""))}, want: "reserved"},
		{name: "pre-bound to an older claim of that name", claim: claim("1Gi"), pvs: []*corev1.PersistentVolume{pv("reserved", "8Gi", claimedBy("ns", "data", "old-uid"))}},
		{name: "waiting for a consumer binds only pre-bound volumes", claim: claim("1Gi"), wait: true,
			pvs: []*corev1.PersistentVolume{pv("fit", "1Gi"), pv("chosen", "2Gi", claimedBy("ns", "data", "claim-uid"))}, want: "chosen"},
		{name: "waiting for a consumer leaves free volumes", claim: claim("1Gi"), wait: true, pvs: []*corev1.PersistentVolume{pv("fit", "1Gi")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bestVolume(tc.claim, tc.pvs, tc.wait)
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want {
				t.Fatalf("got volume %q, want %q", name, tc.want)
			}
		})
	}
}

func TestUnfitReason(t *testing.T) {
	if r := unfitReason(pv("small", "1Gi"), claim("2Gi")); r != "requested PV is too small" {
		t.Fatalf("reason %q", r)
	}
	if r := unfitReason(pv("raw", "2Gi", block), claim("2Gi")); r != "incompatible volumeMode" {
		t.Fatalf("reason %q", r)
	}
	if r := unfitReason(pv("ok", "2Gi"), claim("2Gi")); r != "" {
		t.Fatalf("reason %q for a fitting volume", r)
	}
}
