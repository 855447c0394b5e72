package volumeprotection

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestPodUsesClaim(t *testing.T) {
	now := metav1.Now()
	claim := func(name string, owner types.UID) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if owner != "" {
			pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: owner, Controller: ptr.To(true)}}
		}
		return pvc
	}
	pod := func(node string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"}, Spec: corev1.PodSpec{NodeName: node,
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			}}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	shutDown := func(p *corev1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, ptr.To[int64](0) }
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	tests := []struct {
		name  string
		pod   *corev1.Pod
		claim *corev1.PersistentVolumeClaim
		want  bool
	}{
		{"scheduled pod, claim volume", pod("n1", nil), claim("data", ""), true},
		{"pod not scheduled yet", pod("", nil), claim("data", ""), false},
		{"another claim", pod("n1", nil), claim("other", ""), false},
		{"another namespace", pod("n1", func(p *corev1.Pod) { p.Namespace = "elsewhere" }), claim("data", ""), false},
		{"finished pod still holds a claim volume", pod("n1", finished), claim("data", ""), true},
		{"shut-down pod still holds a claim volume", pod("n1", shutDown), claim("data", ""), true},
		{"ephemeral claim made for the pod", pod("n1", nil), claim("p-scratch", "pod-uid"), true},
		{"ephemeral claim of the same name not made for it", pod("n1", nil), claim("p-scratch", "other-uid"), false},
		{"ephemeral claim of a shut-down pod", pod("n1", shutDown), claim("p-scratch", "pod-uid"), false},
	}
	for _, tt := range tests {
		if got := PodUsesClaim(tt.pod, tt.claim); got != tt.want {
			t.Errorf("%s: PodUsesClaim = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := ClaimNames(pod("", nil)); len(got) != 2 || got[0] != "data" || got[1] != "p-scratch" {
		t.Errorf("ClaimNames = %v, want [data p-scratch]", got)
	}
}

func TestFinalizerStates(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name             string
		meta             metav1.ObjectMeta
		needs, candidate bool
	}{
		{"new, without", metav1.ObjectMeta{}, true, false},
		{"new, with", metav1.ObjectMeta{Finalizers: []string{ClaimFinalizer}}, false, false},
		{"deleted, with", metav1.ObjectMeta{Finalizers: []string{"x", ClaimFinalizer}, DeletionTimestamp: &now}, false, true},
		{"deleted, without", metav1.ObjectMeta{Finalizers: []string{"x"}, DeletionTimestamp: &now}, false, false},
	}
	for _, tt := range tests {
		if got := NeedsFinalizer(&tt.meta, ClaimFinalizer); got != tt.needs {
			t.Errorf("%s: NeedsFinalizer = %v", tt.name, got)
		}
		if got := DeletionCandidate(&tt.meta, ClaimFinalizer); got != tt.candidate {
			t.Errorf("%s: DeletionCandidate = %v", tt.name, got)
		}
	}
	m := &metav1.ObjectMeta{Finalizers: []string{"a", ClaimFinalizer, "b"}}
	SetFinalizer(m, ClaimFinalizer, true)
	if !slices.Equal(m.Finalizers, []string{"a", "b", ClaimFinalizer}) {
		t.Errorf("SetFinalizer on: %v, want it once", m.Finalizers)
	}
	SetFinalizer(m, ClaimFinalizer, false)
	if !slices.Equal(m.Finalizers, []string{"a", "b"}) {
		t.Errorf("SetFinalizer off: %v", m.Finalizers)
	}
	for phase, want := range map[corev1.PersistentVolumePhase]bool{corev1.VolumeBound: true, corev1.VolumeReleased: false, corev1.VolumeAvailable: false} {
		if got := VolumeInUse(&corev1.PersistentVolume{Status: corev1.PersistentVolumeStatus{Phase: phase}}); got != want {
			t.Errorf("VolumeInUse(%s) = %v", phase, got)
		}
	}
}
