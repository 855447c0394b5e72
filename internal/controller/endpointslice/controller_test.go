package endpointslice_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/endpointslice"
)

func waitSlices(t *testing.T, client kubernetes.Interface, ns, svc string, what string, cond func([]discoveryv1.EndpointSlice) bool) []discoveryv1.EndpointSlice {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := client.DiscoveryV1().EndpointSlices(ns).List(t.Context(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
		if err == nil && cond(list.Items) {
			return list.Items
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; slices: %+v", what, list.Items)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runningPod creates a pod and gives it the status a kubelet would.
func runningPod(t *testing.T, client kubernetes.Interface, name, ip string, ready bool, labels map[string]string, ports ...corev1.ContainerPort) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ep", Labels: labels},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i", Ports: ports}}}}
	created, err := client.CoreV1().Pods("ep").Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
	if _, err := client.CoreV1().Pods("ep").UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestEndpointSlicesFollowPods(t *testing.T) {
	env := controllertest.New(t, "ep")
	c := endpointslice.New(env.Context)
	env.Start(t, c)
	client := env.Context.Client
	app := map[string]string{"app": "web"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ep", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: app, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
			{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9091)},
		}}}
	if _, err := client.CoreV1().Services("ep").Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, client, "ep", "web", "an empty slice", func(s []discoveryv1.EndpointSlice) bool {
		return len(s) == 1 && len(s[0].Endpoints) == 0
	})
	http := corev1.ContainerPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}
	runningPod(t, client, "a", "10.42.0.5", true, app, http)
	runningPod(t, client, "b", "10.42.0.6", false, app, http)
	runningPod(t, client, "other", "10.42.0.7", true, map[string]string{"app": "db"}, http)
	slices := waitSlices(t, client, "ep", "web", "two endpoints", func(s []discoveryv1.EndpointSlice) bool {
		return len(s) == 1 && len(s[0].Endpoints) == 2
	})
	s := slices[0]
	if s.Labels["team"] != "a" || s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" || s.OwnerReferences[0].Name != "web" {
		t.Errorf("slice metadata: labels %v owners %v", s.Labels, s.OwnerReferences)
	}
	ports := map[string]int32{}
	for _, p := range s.Ports {
		ports[*p.Name] = *p.Port
	}
	if ports["http"] != 8080 || ports["metrics"] != 9091 {
		t.Errorf("ports %v, want http→8080 (named) and metrics→9091", ports)
	}
	for _, ep := range s.Endpoints {
		wantReady := ep.TargetRef.Name == "a"
		if *ep.Conditions.Ready != wantReady || *ep.Conditions.Serving != wantReady || *ep.Conditions.Terminating {
			t.Errorf("endpoint %s: conditions %+v, want ready=serving=%v", ep.TargetRef.Name, ep.Conditions, wantReady)
		}
	}
	// More than 100 pods make two slices (below). A pod being deleted gracefully is terminating; once gone it leaves.
	if err := client.CoreV1().Pods("ep").Delete(t.Context(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, client, "ep", "web", "b terminating", func(s []discoveryv1.EndpointSlice) bool {
		for _, ep := range s[0].Endpoints {
			if ep.TargetRef.Name == "b" {
				return *ep.Conditions.Terminating && !*ep.Conditions.Ready
			}
		}
		return false
	})
	zero := int64(0)
	if err := client.CoreV1().Pods("ep").Delete(t.Context(), "b", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, client, "ep", "web", "one endpoint", func(s []discoveryv1.EndpointSlice) bool {
		return len(s) == 1 && len(s[0].Endpoints) == 1
	})
	for i := 0; i < 110; i++ {
		runningPod(t, client, fmt.Sprintf("p%03d", i), fmt.Sprintf("10.42.1.%d", i+1), true, app, http)
	}
	waitSlices(t, client, "ep", "web", "111 endpoints in two slices", func(s []discoveryv1.EndpointSlice) bool {
		return len(s) == 2 && len(s[0].Endpoints)+len(s[1].Endpoints) == 111
	})
}
