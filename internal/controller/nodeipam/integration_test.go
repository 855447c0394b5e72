package nodeipam_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/controller/controllertest"
	"orch/internal/controller/nodeipam"
	"orch/internal/envtest"
)

// TestNodesGetDistinctCIDRs runs a dual-stack cluster: each node gets an
// IPv4 /24 and an IPv6 /64, the IPv4 one first as in --cluster-cidr.
func TestNodesGetDistinctCIDRs(t *testing.T) {
	env := controllertest.New(t)
	_, v4, _ := net.ParseCIDR("10.42.0.0/16")
	_, v6, _ := net.ParseCIDR("fd00:42::/56")
	c, err := nodeipam.New(env.Context, nodeipam.Ranges([]*net.IPNet{v4, v6}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := env.Start(t, c)
	nodes := env.Client.CoreV1().Nodes()
	for i := 0; i < 5; i++ {
		if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var seen map[string]string
	envtest.Eventually(t, "a CIDR for each of the 5 nodes", func() (bool, error) {
		list, err := nodes.List(ctx, metav1.ListOptions{})
		seen = map[string]string{}
		for _, n := range list.Items {
			if n.Spec.PodCIDR != "" {
				if other, dup := seen[n.Spec.PodCIDR]; dup {
					t.Fatalf("%s and %s both got %s", other, n.Name, n.Spec.PodCIDR)
				}
				seen[n.Spec.PodCIDR] = n.Name
				if len(n.Spec.PodCIDRs) != 2 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR || !v6.Contains(net.ParseIP(strings.Split(n.Spec.PodCIDRs[1], "/")[0])) {
					t.Fatalf("%s: podCIDRs %v, want %s and a /64 of %s", n.Name, n.Spec.PodCIDRs, n.Spec.PodCIDR, v6)
				}
			}
		}
		return len(seen) == 5, err
	})
	if len(seen) != 5 {
		t.Fatalf("%d of 5 nodes got a CIDR: %v", len(seen), seen)
	}
	for i := 0; i < 5; i++ {
		if _, ok := seen[fmt.Sprintf("10.42.%d.0/24", i)]; !ok {
			t.Errorf("10.42.%d.0/24 was not handed out: %v", i, seen)
		}
	}
	// A deleted node's CIDR goes to the next node.
	victim := seen["10.42.2.0/24"]
	if err := nodes.Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller counts the CIDRs in use from the shared informer's
	// cache: wait until the deletion is there.
	envtest.EventuallyTrue(t, "the deletion in the controller's cache", func() bool {
		_, err := env.Informers.Core().V1().Nodes().Lister().Get(victim)
		return apierrors.IsNotFound(err)
	})
	if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.EventuallyTrue(t, "a CIDR for the new node", func() bool {
		n, err := nodes.Get(ctx, "late", metav1.GetOptions{})
		return err == nil && n.Spec.PodCIDR != ""
	})
	if n, _ := nodes.Get(ctx, "late", metav1.GetOptions{}); n.Spec.PodCIDR != "10.42.2.0/24" || len(n.Spec.PodCIDRs) != 2 || n.Spec.PodCIDRs[1] != "fd00:42:0:2::/64" {
		t.Fatalf("the new node got %v, want the freed 10.42.2.0/24 and fd00:42:0:2::/64", n.Spec.PodCIDRs)
	}
}
