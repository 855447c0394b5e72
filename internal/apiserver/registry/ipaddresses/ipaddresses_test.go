package ipaddresses

import (
	"reflect"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

// address is an address as the conformance test creates it.
func address(name string, ref *networkingv1.ParentReference) *networkingv1.IPAddress {
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"type": "broadcast"}},
		Spec:       networkingv1.IPAddressSpec{ParentRef: ref},
	}
}

func parent() *networkingv1.ParentReference {
	return &networkingv1.ParentReference{Group: "mygroup", Resource: "myresources", Namespace: "foo", Name: "bar"}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "networking.k8s.io/v1" || r.Resource != "ipaddresses" || r.Kind != "IPAddress" ||
		r.SingularName != "ipaddress" || r.Namespaced || r.HasStatus || !reflect.DeepEqual(r.ShortNames, []string{"ip"}) {
		t.Errorf("names: %+v", r)
	}
	if r.NameValidation != registry.NameIP {
		t.Errorf("name rule %v, want NameIP", r.NameValidation)
	}
	if _, ok := r.NewList().(*networkingv1.IPAddressList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestValidate(t *testing.T) {
	with := func(change func(*networkingv1.ParentReference)) *networkingv1.IPAddress {
		ref := parent()
		change(ref)
		return address("10.43.0.10", ref)
	}
	tests := []struct {
		name string
		ip   *networkingv1.IPAddress
		want []string
	}{
		{"conformance IPv4", address("255.255.255.255", parent()), nil},
		{"conformance IPv6", address("fe80::42:1dff:fe84:f9e2", parent()), nil},
		{"a service's", with(func(r *networkingv1.ParentReference) {
			r.Group, r.Resource, r.Namespace, r.Name = "", "services", "default", "kubernetes"
		}), nil},
		{"cluster-scoped parent", with(func(r *networkingv1.ParentReference) { r.Namespace = "" }), nil},
		{"no parent", address("10.43.0.10", nil), []string{"FieldValueRequired spec.parentRef"}},
		{"empty parent", address("10.43.0.10", &networkingv1.ParentReference{}), []string{"FieldValueRequired spec.parentRef.resource", "FieldValueRequired spec.parentRef.name"}},
		{"bad group", with(func(r *networkingv1.ParentReference) { r.Group = "My_Group" }), []string{"FieldValueInvalid spec.parentRef.group"}},
		{"resource with a slash", with(func(r *networkingv1.ParentReference) { r.Resource = "a/b" }), []string{"FieldValueInvalid spec.parentRef.resource"}},
		{"name is a dot", with(func(r *networkingv1.ParentReference) { r.Name = "." }), []string{"FieldValueInvalid spec.parentRef.name"}},
		{"namespace with a percent", with(func(r *networkingv1.ParentReference) { r.Namespace = "a%b" }), []string{"FieldValueInvalid spec.parentRef.namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Create(Resource(), tt.ip), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	annotated := address("255.255.255.255", parent())
	annotated.Annotations = map[string]string{"updated": "true"}
	moved := parent()
	moved.Name = "baz"
	tests := []struct {
		name string
		ip   *networkingv1.IPAddress
		want []string
	}{
		{"annotations", annotated, nil},
		{"other parent", address("255.255.255.255", moved), []string{"FieldValueInvalid spec.parentRef"}},
		{"parent dropped", address("255.255.255.255", nil), []string{"FieldValueRequired spec.parentRef", "FieldValueInvalid spec.parentRef"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Update(Resource(), tt.ip, address("255.255.255.255", parent())), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-10 * time.Minute))
	service := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "kubernetes"}
	tests := []struct {
		name string
		ip   *networkingv1.IPAddress
		want []interface{}
	}{
		{"namespaced parent", address("255.255.255.255", parent()), []interface{}{"255.255.255.255", "myresources.mygroup/foo/bar", "10m"}},
		{"a service's", address("10.43.0.1", service), []interface{}{"10.43.0.1", "services/default/kubernetes", "10m"}},
		{"upper case", address("10.43.0.2", &networkingv1.ParentReference{Group: "Example.COM", Resource: "Gateways", Name: "GW"}),
			[]interface{}{"10.43.0.2", "gateways.example.com/GW", "10m"}},
		{"no parent", address("10.43.0.3", nil), []interface{}{"10.43.0.3", "<none>", "10m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ip.CreationTimestamp = created
			if row := r.Row(tt.ip, now); !reflect.DeepEqual(row, tt.want) {
				t.Errorf("row = %#v, want %#v", row, tt.want)
			}
		})
	}
	var headers []string
	for _, c := range r.Columns {
		headers = append(headers, c.Name)
	}
	if want := []string{"Name", "ParentRef"}; !reflect.DeepEqual(headers, want) {
		t.Errorf("columns %v, want %v", headers, want)
	}
}
