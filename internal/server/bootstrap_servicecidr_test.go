package server

import (
	"context"
	"reflect"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestDefaultServiceCIDRListsEveryFamily: the default ServiceCIDR holds
// both --service-cidr ranges on a dual-stack server, and a single-stack
// one left by an earlier start gains the second family.
func TestDefaultServiceCIDRListsEveryFamily(t *testing.T) {
	p, err := Config{ServiceCIDR: "10.43.0.0/16,fd00:43::/112", ClusterCIDR: "10.42.0.0/16,fd00:42::/56", ClusterDNS: "10.43.0.10",
		HTTPSPort: 6443, AdvertiseAddress: "10.0.0.1"}.parse()
	if err != nil {
		t.Fatal(err)
	}
	b := newBootstrap(p, nil, testLogger())
	want := []string{"10.43.0.0/16", "fd00:43::/112"}
	ctx := context.Background()
	for name, client := range map[string]*fake.Clientset{
		"new": fake.NewClientset(),
		"single-stack before": fake.NewClientset(&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: defaultServiceCIDRName},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.43.0.0/16"}}}),
	} {
		if err := b.ensureServiceCIDR(ctx, client); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sc, err := client.NetworkingV1().ServiceCIDRs().Get(ctx, defaultServiceCIDRName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(sc.Spec.CIDRs, want) || len(sc.Status.Conditions) != 1 || sc.Status.Conditions[0].Type != networkingv1.ServiceCIDRConditionReady {
			t.Errorf("%s: cidrs %v conditions %+v, want %v and Ready", name, sc.Spec.CIDRs, sc.Status.Conditions, want)
		}
	}
}
