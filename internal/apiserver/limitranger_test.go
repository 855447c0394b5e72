package apiserver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A namespace's LimitRange gives new pods its defaults (and says so in
// an annotation) and refuses pods beyond its bounds, as upstream's
// LimitRanger.
func TestLimitRanger(t *testing.T) {
	_, client := newClient(t, "lr")
	ctx := testContext(t)
	list := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	if _, err := client.CoreV1().LimitRanges("lr").Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Min: list("100m", "10Mi"), Max: list("500m", "500Mi"),
			Default: list("500m", "500Mi"), DefaultRequest: list("100m", "200Mi"),
		}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, requests corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: requests}}}}}
	}
	got, err := client.CoreV1().Pods("lr").Create(ctx, pod("defaults", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := got.Spec.Containers[0].Resources
	if !r.Requests.Cpu().Equal(resource.MustParse("100m")) || !r.Requests.Memory().Equal(resource.MustParse("200Mi")) ||
		!r.Limits.Cpu().Equal(resource.MustParse("500m")) || !r.Limits.Memory().Equal(resource.MustParse("500Mi")) {
		t.Errorf("resources %+v, want the LimitRange's defaults", r)
	}
	if want := "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"; got.Annotations["kubernetes.io/limit-ranger"] != want {
		t.Errorf("annotation %q, want %q", got.Annotations["kubernetes.io/limit-ranger"], want)
	}
	_, err = client.CoreV1().Pods("lr").Create(ctx, pod("too-small", list("50m", "100Mi")), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "minimum cpu usage per Container is 100m, but request is 50m") {
		t.Errorf("a pod below the minimum: %v", err)
	}
}
