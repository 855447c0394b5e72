package endpointslices

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func slice(addrType discoveryv1.AddressType, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc"}, AddressType: addrType}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}})
	}
	return s
}

func TestDefault(t *testing.T) {
	s := slice(discoveryv1.AddressTypeIPv4)
	s.Ports = []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}
	Resource().Default(s)
	if p := s.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
		t.Errorf("port defaults: %+v", p)
	}
}

func TestValidate(t *testing.T) {
	r := Resource()
	dupPorts := slice(discoveryv1.AddressTypeIPv4, "10.0.0.1")
	dupPorts.Ports = []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}, {Port: ptr.To[int32](81)}}
	badPort := slice(discoveryv1.AddressTypeIPv4, "10.0.0.1")
	badPort.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("HTTP"), Protocol: ptr.To(corev1.Protocol("ICMP"))}}
	noAddr := slice(discoveryv1.AddressTypeIPv4)
	noAddr.Endpoints = []discoveryv1.Endpoint{{}}
	tests := []struct {
		name string
		s    *discoveryv1.EndpointSlice
		want []string
	}{
		{"ipv4", slice(discoveryv1.AddressTypeIPv4, "10.42.0.5", "10.42.1.7"), nil},
		{"ipv6", slice(discoveryv1.AddressTypeIPv6, "fd00::5"), nil},
		{"fqdn", slice(discoveryv1.AddressTypeFQDN, "db.example.com"), nil},
		{"no type", slice(""), []string{"FieldValueRequired addressType"}},
		{"bad type", slice("IPv5"), []string{"FieldValueNotSupported addressType"}},
		{"wrong family", slice(discoveryv1.AddressTypeIPv4, "fd00::5"), []string{"FieldValueInvalid endpoints[0].addresses[0]"}},
		{"loopback", slice(discoveryv1.AddressTypeIPv4, "127.0.0.1"), []string{"FieldValueInvalid endpoints[0].addresses[0]"}},
		{"not an ip", slice(discoveryv1.AddressTypeIPv4, "web"), []string{"FieldValueInvalid endpoints[0].addresses[0]"}},
		{"no addresses", noAddr, []string{"FieldValueRequired endpoints[0].addresses"}},
		{"duplicate unnamed ports", dupPorts, []string{"FieldValueDuplicate ports[1].name"}},
		{"bad port", badPort, []string{"FieldValueInvalid ports[0].name", "FieldValueNotSupported ports[0].protocol"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.s, nil), tt.want...)
		})
	}
	registrytest.ExpectErrors(t, registrytest.Validate(r, slice(discoveryv1.AddressTypeIPv6), slice(discoveryv1.AddressTypeIPv4)), "FieldValueInvalid addressType")
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Now()
	s := slice(discoveryv1.AddressTypeIPv4, "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5")
	s.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	s.Ports = []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}, {Name: ptr.To("metrics")}, {}}
	row := r.Row(s, now)
	registrytest.CheckTable(t, r, row)
	want := []interface{}{"web-abc", "IPv4", "80,metrics,*", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...", "60s"}
	for i := range want {
		if row[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v", i, row[i], want[i])
		}
	}
	empty := r.Row(slice(discoveryv1.AddressTypeIPv4), now)
	if empty[2] != "<unset>" || empty[3] != "<unset>" {
		t.Errorf("empty slice row = %v", empty)
	}
}
