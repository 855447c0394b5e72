package servicelb

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

// TestIngressFollowsNodes: a LoadBalancer Service gets the Ready,
// non-excluded nodes' addresses (ExternalIP first); externalTrafficPolicy
// Local narrows them to nodes with a ready endpoint; another balancer's
// class is left alone; a Service that becomes ClusterIP loses its ingress.
func TestIngressFollowsNodes(t *testing.T) {
	env := controllertest.New(t, "default")
	client := env.Context.Client
	ctx := context.Background()
	addNode(t, client, "internal", nil, corev1.ConditionTrue, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"})
	addNode(t, client, "external", nil, corev1.ConditionTrue,
		corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "192.0.2.2"})
	addNode(t, client, "notready", nil, corev1.ConditionFalse, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.3"})
	addNode(t, client, "excluded", map[string]string{ExcludeLabel: ""}, corev1.ConditionTrue, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.4"})
	env.Start(t, New(env.Context))

	lb := addService(t, client, "web", nil)
	other := "example.com/other"
	addService(t, client, "classy", &other)
	ingressIs(t, client, "web", "192.0.2.2", "10.0.0.1")

	addNode(t, client, "late", nil, corev1.ConditionTrue, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"})
	ingressIs(t, client, "web", "192.0.2.2", "10.0.0.1", "10.0.0.5")

	// Local: only the node with a ready endpoint.
	lb, err := client.CoreV1().Services("default").Get(ctx, lb.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if lb, err = client.CoreV1().Services("default").Update(ctx, lb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready, notReady, node, far := true, false, "internal", "late"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-x", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.42.1.5"}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"10.42.2.5"}, NodeName: &far, Conditions: discoveryv1.EndpointConditions{Ready: &notReady}},
		},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ingressIs(t, client, "web", "10.0.0.1")

	if lb, err = client.CoreV1().Services("default").Get(ctx, lb.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	lb.Spec.Type = corev1.ServiceTypeClusterIP
	lb.Spec.ExternalTrafficPolicy = ""
	for i := range lb.Spec.Ports {
		lb.Spec.Ports[i].NodePort = 0
	}
	if _, err := client.CoreV1().Services("default").Update(ctx, lb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ingressIs(t, client, "web")
	classy, err := client.CoreV1().Services("default").Get(ctx, "classy", metav1.GetOptions{})
	if err != nil || len(classy.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a Service of another load balancer class: ingress %v, err %v; want it left alone", classy.Status.LoadBalancer.Ingress, err)
	}
}

func ingressIs(t *testing.T, client kubernetes.Interface, name string, want ...string) {
	t.Helper()
	slices.Sort(want)
	envtest.Eventually(t, "ingress of "+name+" = ["+strings.Join(want, ",")+"]", func() (bool, error) {
		svc, err := client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var got []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IPMode == nil || *in.IPMode != corev1.LoadBalancerIPModeVIP {
				t.Errorf("ingress %s without ipMode VIP", in.IP)
			}
			got = append(got, in.IP)
		}
		return slices.Equal(got, want), nil
	})
}

func addService(t *testing.T, client kubernetes.Interface, name string, class *string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class, Selector: map[string]string{"app": name},
		Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
	}}
	out, err := client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func addNode(t *testing.T, client kubernetes.Interface, name string, labels map[string]string, ready corev1.ConditionStatus, addrs ...corev1.NodeAddress) {
	t.Helper()
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = addrs
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
