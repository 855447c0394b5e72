package clusterdns

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

// TestSliceFollowsNodes: kube-dns's EndpointSlice lists each node with a
// podCIDR at its gateway address, ready as the node is, and follows nodes
// that become NotReady, get a podCIDR, or go.
func TestSliceFollowsNodes(t *testing.T) {
	env := controllertest.New(t, metav1.NamespaceSystem)
	client := env.Context.Client
	ctx := context.Background()
	createNode(t, client, "b", "10.42.2.0/24", corev1.ConditionTrue)
	createNode(t, client, "a", "10.42.1.0/24", corev1.ConditionFalse)
	createNode(t, client, "nocidr", "", corev1.ConditionTrue)
	env.Start(t, New(env.Context))

	want := func(entries ...string) func() (bool, error) {
		return func() (bool, error) {
			s, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Get(ctx, ServiceName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			var got []string
			for _, ep := range s.Endpoints {
				got = append(got, fmt.Sprintf("%s=%s ready=%v", *ep.NodeName, ep.Addresses[0], *ep.Conditions.Ready))
			}
			ok := slices.Equal(got, entries) && len(s.Ports) == 3 && s.Labels["kubernetes.io/service-name"] == ServiceName
			if !ok {
				t.Logf("slice: %v ports %d", got, len(s.Ports))
			}
			return ok, nil
		}
	}
	envtest.Eventually(t, "one endpoint per node with a podCIDR", want("a=10.42.1.1 ready=false", "b=10.42.2.1 ready=true"))

	setReady(t, client, "a", corev1.ConditionTrue)
	n, err := client.CoreV1().Nodes().Get(ctx, "nocidr", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.42.3.0/24", []string{"10.42.3.0/24"}
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "readiness and a new podCIDR followed",
		want("a=10.42.1.1 ready=true", "b=10.42.2.1 ready=true", "nocidr=10.42.3.1 ready=true"))

	if err := client.CoreV1().Nodes().Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "a deleted node's endpoint goes", want("a=10.42.1.1 ready=true", "nocidr=10.42.3.1 ready=true"))
}

func createNode(t *testing.T, client kubernetes.Interface, name, podCIDR string, ready corev1.ConditionStatus) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: podCIDR}}
	if podCIDR != "" {
		n.Spec.PodCIDRs = []string{podCIDR}
	}
	if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setReady(t, client, name, ready)
}

func setReady(t *testing.T, client kubernetes.Interface, name string, ready corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
