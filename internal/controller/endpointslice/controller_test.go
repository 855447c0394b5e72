package endpointslice_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"orch/internal/controller"
	"orch/internal/controller/controllertest"
	"orch/internal/controller/endpointslice"
	"orch/internal/envtest"
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

// TestDualStackServiceSlices runs the controller against an apiserver with
// IPv4 and IPv6 service CIDRs: a dual-stack service gets a slice per
// family, each with the pods' addresses of that family, and loses the
// IPv6 one when it goes back to single stack.
func TestDualStackServiceSlices(t *testing.T) {
	srv := envtest.StartWith(t, envtest.Options{ServiceCIDRs: []string{"10.43.0.0/16", "fd00:43::/112"}})
	client := kubernetes.NewForConfigOrDie(srv.Config)
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ep"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c := endpointslice.New(controller.Context{Client: client, Config: srv.Config, Informers: factory, Log: envtest.Logger()}.WithDefaults())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	factory.StartWithContext(ctx)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })

	app := map[string]string{"app": "web"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ep"}, Spec: corev1.ServiceSpec{
		Selector: app, Ports: []corev1.ServicePort{{Port: 80}}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack)}}
	svc, err := client.CoreV1().Services("ep").Create(t.Context(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runningPod(t, client, "dual", "10.42.0.5", true, app)
	addPodIP(t, client, "dual", "fd00:42::5")
	runningPod(t, client, "only4", "10.42.0.6", true, app)
	addresses := func(s []discoveryv1.EndpointSlice) map[discoveryv1.AddressType][]string {
		out := map[discoveryv1.AddressType][]string{}
		for _, slice := range s {
			for _, ep := range slice.Endpoints {
				out[slice.AddressType] = append(out[slice.AddressType], ep.Addresses...)
			}
		}
		return out
	}
	waitSlices(t, client, "ep", "web", "an IPv4 and an IPv6 slice", func(s []discoveryv1.EndpointSlice) bool {
		return len(s) == 2 && reflect.DeepEqual(addresses(s), map[discoveryv1.AddressType][]string{
			discoveryv1.AddressTypeIPv4: {"10.42.0.5", "10.42.0.6"}, discoveryv1.AddressTypeIPv6: {"fd00:42::5"}})
	})

	svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	svc.Spec.IPFamilies, svc.Spec.ClusterIPs = svc.Spec.IPFamilies[:1], svc.Spec.ClusterIPs[:1]
	if _, err := client.CoreV1().Services("ep").Update(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, client, "ep", "web", "the IPv4 slice alone", func(s []discoveryv1.EndpointSlice) bool {
		return len(s) == 1 && reflect.DeepEqual(addresses(s), map[discoveryv1.AddressType][]string{
			discoveryv1.AddressTypeIPv4: {"10.42.0.5", "10.42.0.6"}})
	})
	// An ExternalName Service has no slices, its selector notwithstanding
	// (as upstream).
	svc, err = client.CoreV1().Services("ep").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy = "", nil, nil, nil
	if _, err := client.CoreV1().Services("ep").Update(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices(t, client, "ep", "web", "no slice", func(s []discoveryv1.EndpointSlice) bool { return len(s) == 0 })
}

// addPodIP gives a running pod a second (other family) address.
func addPodIP(t *testing.T, client kubernetes.Interface, name, ip string) {
	t.Helper()
	pod, err := client.CoreV1().Pods("ep").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
	if _, err := client.CoreV1().Pods("ep").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
