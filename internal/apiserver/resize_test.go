package apiserver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodResize drives pods/resize as the conformance tests do: a
// strategic merge patch and a replace through the subresource change the
// containers' resources (and the generation), nothing else gets through,
// a resize that changes the QoS class is refused, and a get of the
// subresource is the pod.
func TestPodResize(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "rs")
	pods := client.CoreV1().Pods("rs")
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c1", Image: "busybox:1",
			Resources: corev1.ResourceRequirements{Requests: cpu("20m"), Limits: cpu("30m")}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 1 {
		t.Fatalf("generation %d", pod.Generation)
	}

	patch := `{"spec":{"containers":[{"name":"c1","image":"other:2","resources":{"requests":{"cpu":"25m"},"limits":{"cpu":"35m"}}}]}}`
	patched, err := pods.Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	c := patched.Spec.Containers[0]
	if c.Resources.Requests.Cpu().String() != "25m" || c.Resources.Limits.Cpu().String() != "35m" || c.Image != "busybox:1" || patched.Generation != 2 {
		t.Errorf("after the resize patch: resources %v, image %s, generation %d", c.Resources, c.Image, patched.Generation)
	}

	patched.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cpu("40m"), Limits: cpu("50m")}
	replaced, err := pods.UpdateResize(ctx, "web", patched, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := replaced.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "50m" || replaced.Generation != 3 {
		t.Errorf("after the resize update: cpu limit %s, generation %d", got, replaced.Generation)
	}

	// Requests equal to limits would make the pod Guaranteed.
	guaranteed := `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"50m","memory":"10Mi"},"limits":{"cpu":"50m","memory":"10Mi"}}}]}}`
	_, err = pods.Patch(ctx, "web", types.StrategicMergePatchType, []byte(guaranteed), metav1.PatchOptions{}, "resize")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Pod QOS Class may not change as a result of resizing") {
		t.Errorf("a resize to Guaranteed: %v", err)
	}

	// A plain update still may not touch resources.
	plain := replaced.DeepCopy()
	plain.Spec.Containers[0].Resources.Limits = cpu("60m")
	if _, err := pods.Update(ctx, plain, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a plain update of resources: %v", err)
	}

	got, err := client.CoreV1().RESTClient().Get().Namespace("rs").Resource("pods").Name("web").SubResource("resize").Do(ctx).Get()
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := got.(*corev1.Pod); !ok || p.ResourceVersion != replaced.ResourceVersion {
		t.Errorf("get pods/resize: %T %v", got, got)
	}
}
