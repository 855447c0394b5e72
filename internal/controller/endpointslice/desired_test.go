package endpointslice

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// readyPod is a running, ready pod with the given addresses, primary first.
func readyPod(name string, ips ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if len(ips) > 0 {
		p.Status.PodIP = ips[0]
	}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

// sliceAddresses is, per slice in order, its address type and its
// endpoints' addresses.
func sliceAddresses(slices []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range slices {
		line := string(s.AddressType) + ":"
		for _, ep := range s.Endpoints {
			line += " " + ep.Addresses[0]
		}
		out = append(out, line)
	}
	return out
}

func TestDesiredSlicesPerFamily(t *testing.T) {
	pods := []*corev1.Pod{
		readyPod("dual", "10.42.0.5", "fd00:42::5"),
		readyPod("dual6", "fd00:42::6", "10.42.0.6"),
		readyPod("only4", "10.42.0.7"),
		readyPod("only6", "fd00:42::8"),
		readyPod("noip"),
	}
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	cases := []struct {
		name string
		spec corev1.ServiceSpec
		want []string
	}{
		{"IPv4", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{v4}},
			[]string{"IPv4: 10.42.0.5 10.42.0.6 10.42.0.7"}},
		{"IPv6", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{v6}},
			[]string{"IPv6: fd00:42::5 fd00:42::6 fd00:42::8"}},
		{"dual stack", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{v4, v6}},
			[]string{"IPv4: 10.42.0.5 10.42.0.6 10.42.0.7", "IPv6: fd00:42::5 fd00:42::6 fd00:42::8"}},
		{"dual stack, IPv6 first", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{v6, v4}},
			[]string{"IPv6: fd00:42::5 fd00:42::6 fd00:42::8", "IPv4: 10.42.0.5 10.42.0.6 10.42.0.7"}},
		{"no families: the cluster IP's", corev1.ServiceSpec{ClusterIP: "fd00:43::1"},
			[]string{"IPv6: fd00:42::5 fd00:42::6 fd00:42::8"}},
		{"headless without families: both", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone},
			[]string{"IPv4: 10.42.0.5 10.42.0.6 10.42.0.7", "IPv6: fd00:42::5 fd00:42::6 fd00:42::8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: tc.spec}
			if got := sliceAddresses(desiredSlices(svc, pods, nil)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("slices = %q, want %q", got, tc.want)
			}
		})
	}

	// A family no pod has still gets its empty slice.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{v4, v6}}}
	got := sliceAddresses(desiredSlices(svc, []*corev1.Pod{readyPod("only4", "10.42.0.7")}, nil))
	if want := []string{"IPv4: 10.42.0.7", "IPv6:"}; !reflect.DeepEqual(got, want) {
		t.Errorf("slices = %q, want %q", got, want)
	}
}

func TestMatchSlicesKeepsAddressTypes(t *testing.T) {
	slice := func(name string, addressType discoveryv1.AddressType) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: addressType}
	}
	a4, b6, c4, d6 := slice("a", discoveryv1.AddressTypeIPv4), slice("b", discoveryv1.AddressTypeIPv6), slice("c", discoveryv1.AddressTypeIPv4), slice("d", discoveryv1.AddressTypeIPv6)
	want := func(types ...discoveryv1.AddressType) []discoveryv1.EndpointSlice {
		var out []discoveryv1.EndpointSlice
		for _, t := range types {
			out = append(out, discoveryv1.EndpointSlice{AddressType: t})
		}
		return out
	}
	cases := []struct {
		name     string
		existing []*discoveryv1.EndpointSlice
		desired  []discoveryv1.EndpointSlice
		reuse    []*discoveryv1.EndpointSlice
		stale    []*discoveryv1.EndpointSlice
	}{
		{"upgrade: IPv6 is created", []*discoveryv1.EndpointSlice{a4}, want("IPv4", "IPv6"),
			[]*discoveryv1.EndpointSlice{a4, nil}, nil},
		{"downgrade: IPv6 is deleted", []*discoveryv1.EndpointSlice{d6, a4}, want("IPv4"),
			[]*discoveryv1.EndpointSlice{a4}, []*discoveryv1.EndpointSlice{d6}},
		{"in name order per type", []*discoveryv1.EndpointSlice{c4, d6, a4, b6}, want("IPv6", "IPv4"),
			[]*discoveryv1.EndpointSlice{b6, a4}, []*discoveryv1.EndpointSlice{c4, d6}},
		{"family switched: nothing reused", []*discoveryv1.EndpointSlice{a4}, want("IPv6"),
			[]*discoveryv1.EndpointSlice{nil}, []*discoveryv1.EndpointSlice{a4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reuse, stale := matchSlices(tc.existing, tc.desired)
			if !reflect.DeepEqual(reuse, tc.reuse) || !reflect.DeepEqual(stale, tc.stale) {
				t.Errorf("reuse %v stale %v, want %v %v", reuse, stale, tc.reuse, tc.stale)
			}
		})
	}
}
