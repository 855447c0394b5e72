package endpointslicemirroring

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func port(name string, p int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: name, Port: p, Protocol: corev1.ProtocolTCP}
}

func addrs(ips ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range ips {
		out = append(out, corev1.EndpointAddress{IP: ip})
	}
	return out
}

// slim is what a test compares of a desired slice.
type slim struct {
	AddressType discoveryv1.AddressType
	Ports       []string // name:port
	Ready       []string
	NotReady    []string
}

func slimOf(s *discoveryv1.EndpointSlice) slim {
	out := slim{AddressType: s.AddressType}
	for _, p := range s.Ports {
		out.Ports = append(out.Ports, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
	}
	for _, e := range s.Endpoints {
		if *e.Conditions.Ready {
			out.Ready = append(out.Ready, e.Addresses[0])
		} else {
			out.NotReady = append(out.NotReady, e.Addresses[0])
		}
	}
	return out
}

func TestDesiredSlices(t *testing.T) {
	many := make([]string, 0, maxEndpointsPerSubset+5)
	for i := range maxEndpointsPerSubset + 5 {
		many = append(many, fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
	}
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    []slim
		skipped skipped
	}{
		{name: "no subsets, no slices"},
		{
			name:    "one address, one port (the conformance test's Endpoints)",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.1.2.3"), Ports: []corev1.EndpointPort{port("", 80)}}},
			want:    []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{":80"}, Ready: []string{"10.1.2.3"}}},
		},
		{
			name: "ready and not ready addresses",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.2", "10.0.0.1"), NotReadyAddresses: addrs("10.0.0.3"),
				Ports: []corev1.EndpointPort{port("http", 80)}}},
			want: []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{"http:80"},
				Ready: []string{"10.0.0.1", "10.0.0.2"}, NotReady: []string{"10.0.0.3"}}},
		},
		{
			name:    "each address family its own slice",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "fd00::1"), Ports: []corev1.EndpointPort{port("", 80)}}},
			want: []slim{
				{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{":80"}, Ready: []string{"10.0.0.1"}},
				{AddressType: discoveryv1.AddressTypeIPv6, Ports: []string{":80"}, Ready: []string{"fd00::1"}},
			},
		},
		{
			name: "subsets with the same address are one slice with both ports (upstream's multiple subsets test)",
			subsets: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("port80", 8090)}},
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("port81", 9090)}},
			},
			want: []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{"port80:8090", "port81:9090"}, Ready: []string{"10.0.0.1"}}},
		},
		{
			name: "subsets with the same ports are one slice",
			subsets: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("", 80)}},
				{Addresses: addrs("10.0.0.2"), Ports: []corev1.EndpointPort{port("", 80)}},
			},
			want: []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{":80"}, Ready: []string{"10.0.0.1", "10.0.0.2"}}},
		},
		{
			name: "an address listed ready and not ready is not ready",
			subsets: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("", 80)}},
				{NotReadyAddresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{port("", 80)}},
			},
			want: []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{":80"}, NotReady: []string{"10.0.0.1"}}},
		},
		{
			name:    "a subset without ports is mirrored without ports",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1")}},
			want:    []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ready: []string{"10.0.0.1"}}},
		},
		{
			name:    "ports without addresses are not mirrored",
			subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{port("", 80)}}},
		},
		{
			name:    "invalid IPs are skipped",
			subsets: []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "not-an-ip"), Ports: []corev1.EndpointPort{port("", 80)}}},
			want:    []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{":80"}, Ready: []string{"10.0.0.1"}}},
			skipped: skipped{invalid: 1},
		},
		{
			name:    "at most maxEndpointsPerSubset addresses of a subset",
			subsets: []corev1.EndpointSubset{{Addresses: addrs(many...), Ports: []corev1.EndpointPort{port("", 80)}}},
			want:    []slim{{AddressType: discoveryv1.AddressTypeIPv4, Ports: []string{":80"}, Ready: slices.Sorted(slices.Values(many))[:maxEndpointsPerSubset]}},
			skipped: skipped{tooMany: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns"}, Subsets: tt.subsets}
			desired, sk := desiredSlices(ep)
			var got []slim
			for _, s := range desired {
				got = append(got, slimOf(s))
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("slices:\n got %+v\nwant %+v", got, tt.want)
			}
			if sk != tt.skipped {
				t.Errorf("skipped %+v, want %+v", sk, tt.skipped)
			}
		})
	}
}

func TestSliceMetadataAndEndpointFields(t *testing.T) {
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", UID: "uid-1",
			Labels: map[string]string{"team": "a", discoveryv1.LabelServiceName: "other"},
			Annotations: map[string]string{"note": "kept", corev1.EndpointsLastChangeTriggerTime: "x",
				corev1.LastAppliedConfigAnnotation: "{}"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1", Hostname: "h", NodeName: ptr.To("n1"),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns", UID: "pod-uid"}}},
			Ports: []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolUDP, AppProtocol: ptr.To("h2c")}},
		}},
	}
	desired, _ := desiredSlices(ep)
	if len(desired) != 1 {
		t.Fatalf("%d slices, want 1", len(desired))
	}
	s := desired[0]
	wantLabels := map[string]string{"team": "a", discoveryv1.LabelServiceName: "svc", discoveryv1.LabelManagedBy: managedBy}
	if !apiequality.Semantic.DeepEqual(s.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", s.Labels, wantLabels)
	}
	if !apiequality.Semantic.DeepEqual(s.Annotations, map[string]string{"note": "kept"}) {
		t.Errorf("annotations %v, want only note", s.Annotations)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Endpoints", Name: "svc", UID: "uid-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	if len(s.OwnerReferences) != 1 || !apiequality.Semantic.DeepEqual(s.OwnerReferences[0], owner) {
		t.Errorf("owners %+v, want %+v", s.OwnerReferences, owner)
	}
	if s.Namespace != "ns" || s.GenerateName != "svc-" {
		t.Errorf("namespace %q generateName %q", s.Namespace, s.GenerateName)
	}
	wantEndpoint := discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		Hostname: ptr.To("h"), NodeName: ptr.To("n1"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns", UID: "pod-uid"}}
	if !apiequality.Semantic.DeepEqual(s.Endpoints, []discoveryv1.Endpoint{wantEndpoint}) {
		t.Errorf("endpoints %+v, want %+v", s.Endpoints, wantEndpoint)
	}
	wantPort := discoveryv1.EndpointPort{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolUDP), AppProtocol: ptr.To("h2c")}
	if !apiequality.Semantic.DeepEqual(s.Ports, []discoveryv1.EndpointPort{wantPort}) {
		t.Errorf("ports %+v, want %+v", s.Ports, wantPort)
	}
}

func TestShouldMirror(t *testing.T) {
	tests := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		want        bool
	}{
		{name: "plain", want: true},
		{name: "skip-mirror", labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		{name: "skip-mirror false", labels: map[string]string{discoveryv1.LabelSkipMirror: "false"}, want: true},
		{name: "leader election record", annotations: map[string]string{"control-plane.alpha.kubernetes.io/leader": "{}"}},
	}
	for _, tt := range tests {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "e", Labels: tt.labels, Annotations: tt.annotations}}
		if got := shouldMirror(ep); got != tt.want {
			t.Errorf("%s: shouldMirror = %v, want %v", tt.name, got, tt.want)
		}
	}
}
