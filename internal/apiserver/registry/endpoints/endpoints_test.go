package endpoints

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func addrs(ips ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range ips {
		out = append(out, corev1.EndpointAddress{IP: ip})
	}
	return out
}

func TestDefaultAndValidate(t *testing.T) {
	cases := []struct {
		name   string
		subset corev1.EndpointSubset
		want   []string
	}{
		{"valid", corev1.EndpointSubset{Addresses: addrs("10.42.0.5"), Ports: []corev1.EndpointPort{{Port: 80}}}, nil},
		{"no addresses", corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Port: 80}}}, []string{"subsets[0]"}},
		{"bad ip", corev1.EndpointSubset{Addresses: addrs("10.42.0.256")}, []string{"subsets[0].addresses[0].ip"}},
		{"loopback", corev1.EndpointSubset{Addresses: addrs("127.0.0.1")}, []string{"subsets[0].addresses[0].ip"}},
		{"unnamed ports", corev1.EndpointSubset{Addresses: addrs("10.42.0.5"), Ports: []corev1.EndpointPort{{Port: 80}, {Name: "b", Port: 81}}},
			[]string{"subsets[0].ports[0].name"}},
		{"port zero", corev1.EndpointSubset{Addresses: addrs("10.42.0.5"), Ports: []corev1.EndpointPort{{Port: 0}}}, []string{"subsets[0].ports[0].port"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{tc.subset}}
			Resource().Default(ep)
			for _, p := range ep.Subsets[0].Ports {
				if p.Protocol != corev1.ProtocolTCP {
					t.Errorf("protocol = %q, want TCP", p.Protocol)
				}
			}
			var got []string
			for _, e := range Resource().Validate(ep) {
				got = append(got, e.Field)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("error fields = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRow(t *testing.T) {
	now := time.Now()
	created := metav1.NewTime(now.Add(-time.Hour))
	cases := []struct {
		subsets []corev1.EndpointSubset
		want    string
	}{
		{nil, "<none>"},
		{[]corev1.EndpointSubset{{Addresses: addrs("10.42.0.5", "10.42.0.6"), Ports: []corev1.EndpointPort{{Port: 8080}}}}, "10.42.0.5:8080,10.42.0.6:8080"},
		{[]corev1.EndpointSubset{{Addresses: addrs("10.42.0.5")}}, "10.42.0.5"},
		{[]corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"), Ports: []corev1.EndpointPort{{Port: 80}}}},
			"10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more..."},
		{[]corev1.EndpointSubset{{Addresses: addrs("fd00::1"), Ports: []corev1.EndpointPort{{Port: 80}}}}, "[fd00::1]:80"},
	}
	for _, tc := range cases {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: created}, Subsets: tc.subsets}
		want := []interface{}{"web", tc.want, "60m"}
		if got := Resource().Row(ep, now); !reflect.DeepEqual(got, want) {
			t.Errorf("row = %v, want %v", got, want)
		}
	}
}
