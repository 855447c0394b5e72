package endpoints_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/endpoints"
	"orch/internal/envtest"
)

func TestEndpointsFollowService(t *testing.T) {
	env := controllertest.New(t, "ep")
	env.Start(t, endpoints.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ep"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := client.CoreV1().Services("ep").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ep", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	created, err := client.CoreV1().Pods("ep").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.9", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := client.CoreV1().Pods("ep").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the pod's address", func() bool {
		ep, err := client.CoreV1().Endpoints("ep").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1 && ep.Subsets[0].Addresses[0].IP == "10.42.0.9" && ep.Subsets[0].Ports[0].Port == 80
	})
	if err := client.CoreV1().Services("ep").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the endpoints to go with the service", func() bool {
		_, err := client.CoreV1().Endpoints("ep").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// An Endpoints a user wrote without a Service stays, also when it changes,
// as upstream's controller leaves it alone.
func TestEndpointsWithoutServiceStay(t *testing.T) {
	env := controllertest.New(t, "ep")
	env.Start(t, endpoints.New(env.Context))
	client := env.Context.Client
	ctx := t.Context()
	manual := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "ep"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}
	created, err := client.CoreV1().Endpoints("ep").Create(ctx, manual, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Labels = map[string]string{"changed": "yes"}
	if _, err := client.CoreV1().Endpoints("ep").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A service synced after the change: by then the change was seen.
	later := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "ep"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "none"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := client.CoreV1().Services("ep").Create(ctx, later, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "the later service's endpoints", func() bool {
		_, err := client.CoreV1().Endpoints("ep").Get(ctx, "later", metav1.GetOptions{})
		return err == nil
	})
	if _, err := client.CoreV1().Endpoints("ep").Get(ctx, "manual", metav1.GetOptions{}); err != nil {
		t.Errorf("the user's Endpoints: %v, want them kept", err)
	}
}
