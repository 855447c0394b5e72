package endpointslicemirroring

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// slice is a slice named name (empty: a desired one) of addressType with
// ports (numbers) and one ready endpoint per address.
func slice(name string, addressType discoveryv1.AddressType, ports []int32, addresses ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7",
		Labels: map[string]string{discoveryv1.LabelServiceName: "svc", discoveryv1.LabelManagedBy: managedBy}},
		AddressType: addressType}
	for _, p := range ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(""), Port: ptr.To(p), Protocol: ptr.To(corev1.ProtocolTCP)})
	}
	for _, a := range addresses {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

const v4, v6 = discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6

func names(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name                   string
		desired, existing      []*discoveryv1.EndpointSlice
		create, update, delete []string // names; a created slice has none
		updatedAddress         string   // the first updated slice's first address
	}{
		{
			name:    "nothing exists: create",
			desired: []*discoveryv1.EndpointSlice{slice("", v4, []int32{80}, "10.0.0.1")},
			create:  []string{""},
		},
		{
			name:     "the same: nothing to do",
			desired:  []*discoveryv1.EndpointSlice{slice("", v4, []int32{80}, "10.0.0.1")},
			existing: []*discoveryv1.EndpointSlice{slice("a", v4, []int32{80}, "10.0.0.1")},
		},
		{
			name:           "another address: update in place",
			desired:        []*discoveryv1.EndpointSlice{slice("", v4, []int32{80}, "10.2.3.4")},
			existing:       []*discoveryv1.EndpointSlice{slice("a", v4, []int32{80}, "10.1.2.3")},
			update:         []string{"a"},
			updatedAddress: "10.2.3.4",
		},
		{
			name:           "other ports: the slice of the same address type is reused",
			desired:        []*discoveryv1.EndpointSlice{slice("", v4, []int32{81}, "10.0.0.1")},
			existing:       []*discoveryv1.EndpointSlice{slice("a", v4, []int32{80}, "10.0.0.1")},
			update:         []string{"a"},
			updatedAddress: "10.0.0.1",
		},
		{
			name:     "an IPv6 slice is not reused for IPv4",
			desired:  []*discoveryv1.EndpointSlice{slice("", v4, []int32{80}, "10.0.0.1")},
			existing: []*discoveryv1.EndpointSlice{slice("a", v6, []int32{80}, "fd00::1")},
			create:   []string{""},
			delete:   []string{"a"},
		},
		{
			name:    "duplicates (a create the informer had not shown): the first by name stays",
			desired: []*discoveryv1.EndpointSlice{slice("", v4, []int32{80}, "10.0.0.1")},
			existing: []*discoveryv1.EndpointSlice{slice("b", v4, []int32{80}, "10.0.0.1"),
				slice("a", v4, []int32{80}, "10.0.0.1")},
			delete: []string{"b"},
		},
		{
			name:     "nothing desired: all go",
			existing: []*discoveryv1.EndpointSlice{slice("a", v4, []int32{80}, "10.0.0.1"), slice("b", v6, nil, "fd00::1")},
			delete:   []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := plan(tt.desired, tt.existing)
			if got := names(c.create); !slices.Equal(got, tt.create) {
				t.Errorf("create %q, want %q", got, tt.create)
			}
			if got := names(c.update); !slices.Equal(got, tt.update) {
				t.Errorf("update %q, want %q", got, tt.update)
			}
			if got := names(c.delete); !slices.Equal(got, tt.delete) {
				t.Errorf("delete %q, want %q", got, tt.delete)
			}
			if len(c.update) > 0 {
				u := c.update[0]
				if u.Endpoints[0].Addresses[0] != tt.updatedAddress || u.ResourceVersion != "7" {
					t.Errorf("updated slice: address %s resourceVersion %q, want %s and the existing one's", u.Endpoints[0].Addresses[0], u.ResourceVersion, tt.updatedAddress)
				}
				if !slices.Equal(u.Ports, tt.desired[0].Ports) {
					t.Errorf("updated slice ports %v, want the desired %v", u.Ports, tt.desired[0].Ports)
				}
			}
		})
	}
}

func TestPlanDoesNotChangeExisting(t *testing.T) {
	cur := slice("a", v4, []int32{80}, "10.1.2.3")
	plan([]*discoveryv1.EndpointSlice{slice("", v4, []int32{80}, "10.2.3.4")}, []*discoveryv1.EndpointSlice{cur})
	if cur.Endpoints[0].Addresses[0] != "10.1.2.3" {
		t.Errorf("the informer's object was changed: %v", cur.Endpoints)
	}
}
