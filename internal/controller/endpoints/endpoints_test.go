package endpoints

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(name, ip string, ready bool, ports ...corev1.ContainerPort) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: ports}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func TestSubsets(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
	p8080 := corev1.ContainerPort{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}
	p9000 := corev1.ContainerPort{Name: "http", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}
	terminating := pod("gone", "10.0.0.9", true, p8080)
	terminating.DeletionTimestamp = &metav1.Time{}
	finished := pod("done", "10.0.0.8", false, p8080)
	finished.Status.Phase = corev1.PodSucceeded
	pods := []*corev1.Pod{
		pod("b", "10.0.0.2", true, p8080), pod("a", "10.0.0.1", true, p8080), pod("c", "10.0.0.3", false, p8080),
		pod("d", "10.0.0.4", true, p9000), pod("noip", "", true, p8080), pod("noport", "10.0.0.5", true), terminating, finished,
	}
	got := Subsets(svc, pods)
	if len(got) != 2 {
		t.Fatalf("%d subsets, want 2 (port 8080 and 9000): %+v", len(got), got)
	}
	first := got[0]
	if first.Ports[0].Port != 8080 || len(first.Addresses) != 2 || first.Addresses[0].IP != "10.0.0.1" || len(first.NotReadyAddresses) != 1 || first.NotReadyAddresses[0].IP != "10.0.0.3" {
		t.Errorf("8080 subset = %+v", first)
	}
	if got[1].Ports[0].Port != 9000 || len(got[1].Addresses) != 1 {
		t.Errorf("9000 subset = %+v", got[1])
	}
	svc.Spec.PublishNotReadyAddresses = true
	all := Subsets(svc, pods)
	if n := len(all[0].Addresses); n != 4 || len(all[0].NotReadyAddresses) != 0 {
		t.Errorf("publishNotReadyAddresses: %d ready addresses (want 4: a, b, c and the terminating one), %d not ready", n, len(all[0].NotReadyAddresses))
	}
}

// dualPod is a ready pod with the given addresses, primary first.
func dualPod(name string, ips ...string) *corev1.Pod {
	p := pod(name, ips[0], true)
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

func TestAddressesFollowThePrimaryFamily(t *testing.T) {
	dual := dualPod("dual", "10.42.0.5", "fd00:42::5")
	dual6 := dualPod("dual6", "fd00:42::6", "10.42.0.6")
	only4 := dualPod("only4", "10.42.0.7")
	only6 := dualPod("only6", "fd00:42::8")
	headless := corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}
	cases := []struct {
		name string
		spec corev1.ServiceSpec
		want map[string]string // pod name → listed address; absent: left out
	}{
		{"IPv4 service", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}},
			map[string]string{"dual": "10.42.0.5", "dual6": "10.42.0.6", "only4": "10.42.0.7"}},
		{"IPv6 service", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}},
			map[string]string{"dual": "fd00:42::5", "dual6": "fd00:42::6", "only6": "fd00:42::8"}},
		{"IPv6-primary dual-stack service", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}},
			map[string]string{"dual": "fd00:42::5", "dual6": "fd00:42::6", "only6": "fd00:42::8"}},
		{"no families: the cluster IP's", corev1.ServiceSpec{ClusterIP: "fd00:43::1"},
			map[string]string{"dual": "fd00:42::5", "dual6": "fd00:42::6", "only6": "fd00:42::8"}},
		{"headless without families: each pod's primary", headless,
			map[string]string{"dual": "10.42.0.5", "dual6": "fd00:42::6", "only4": "10.42.0.7", "only6": "fd00:42::8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: tc.spec}
			got := map[string]string{}
			for _, s := range Subsets(svc, []*corev1.Pod{dual, dual6, only4, only6}) {
				for _, a := range s.Addresses {
					got[a.TargetRef.Name] = a.IP
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("addresses = %v, want %v", got, tc.want)
			}
		})
	}
}
