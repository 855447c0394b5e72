package servicecidrs

import (
	"reflect"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry"
	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// serviceCIDR is a range as the conformance tests create one.
func serviceCIDR(cidrs ...string) *networkingv1.ServiceCIDR {
	return &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "test-svc-cidr"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "networking.k8s.io/v1" || r.Resource != "servicecidrs" || r.Kind != "ServiceCIDR" ||
		r.SingularName != "servicecidr" || r.Namespaced || !r.HasStatus || r.NameValidation != registry.NameSubdomain || r.ShortNames != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.NewList().(*networkingv1.ServiceCIDRList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestCreate(t *testing.T) {
	ready := serviceCIDR("10.43.0.0/16")
	ready.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue}}
	tests := []struct {
		name string
		c    *networkingv1.ServiceCIDR
		want []string
	}{
		{"IPv4", serviceCIDR("203.0.113.0/24"), nil},
		{"IPv6", serviceCIDR("2001:db8:cb00::/64"), nil},
		{"dual stack", serviceCIDR("10.43.0.0/16", "fd00:43::/112"), nil},
		{"status is dropped", ready, nil},
		{"none", serviceCIDR(), []string{"FieldValueRequired spec.cidrs"}},
		{"three", serviceCIDR("10.0.0.0/24", "fd00::/112", "10.1.0.0/24"), []string{"FieldValueInvalid spec.cidrs"}},
		{"not a CIDR", serviceCIDR("10.0.0.0"), []string{"FieldValueInvalid spec.cidrs[0]"}},
		{"host bits set", serviceCIDR("10.0.0.1/24"), []string{"FieldValueInvalid spec.cidrs[0]"}},
		{"same family twice", serviceCIDR("10.0.0.0/24", "10.1.0.0/24"), []string{"FieldValueInvalid spec.cidrs"}},
		{"second not a CIDR", serviceCIDR("10.0.0.0/24", "bad"), []string{"FieldValueInvalid spec.cidrs[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Create(Resource(), tt.c), tt.want...)
			if len(tt.c.Status.Conditions) > 0 {
				t.Errorf("status kept on create: %+v", tt.c.Status)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	labelled := serviceCIDR("10.43.0.0/16")
	labelled.Labels = map[string]string{"a": "b"}
	immutable := func(field string) []want { return []want{{"FieldValueInvalid " + field, "field is immutable"}} }
	tests := []struct {
		name   string
		c, old *networkingv1.ServiceCIDR
		want   []want
	}{
		{"labels", labelled, serviceCIDR("10.43.0.0/16"), nil},
		{"to dual stack", serviceCIDR("10.43.0.0/16", "fd00:43::/112"), serviceCIDR("10.43.0.0/16"), nil},
		{"other range", serviceCIDR("10.44.0.0/16"), serviceCIDR("10.43.0.0/16"), immutable("spec.cidrs[0]")},
		{"to dual stack changing the first", serviceCIDR("10.44.0.0/16", "fd00:43::/112"), serviceCIDR("10.43.0.0/16"), immutable("spec.cidrs[0]")},
		{"to the same family twice", serviceCIDR("10.43.0.0/16", "10.44.0.0/16"), serviceCIDR("10.43.0.0/16"), []want{{"FieldValueInvalid spec.cidrs", "one IP for each IP family"}}},
		{"to a bad second", serviceCIDR("10.43.0.0/16", "fd00::1/112"), serviceCIDR("10.43.0.0/16"), []want{{"FieldValueInvalid spec.cidrs[1]", "bits set beyond the prefix length"}}},
		{"dropping a family", serviceCIDR("10.43.0.0/16"), serviceCIDR("10.43.0.0/16", "fd00:43::/112"), immutable("spec.cidrs")},
		{"to none", serviceCIDR(), serviceCIDR("10.43.0.0/16"), immutable("spec.cidrs")},
		{"to three", serviceCIDR("10.43.0.0/16", "fd00::/112", "10.1.0.0/24"), serviceCIDR("10.43.0.0/16"), immutable("spec.cidrs")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectWant(t, registrytest.Update(Resource(), tt.c, tt.old), tt.want...)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	c := serviceCIDR("10.43.0.0/16")
	c.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue}}
	registrytest.ExpectErrors(t, Resource().ValidateStatusUpdate(c, serviceCIDR("10.43.0.0/16")))
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := serviceCIDR("10.43.0.0/16", "fd00:43::/112")
	c.Name = "kubernetes"
	c.CreationTimestamp = metav1.NewTime(now.Add(-49 * time.Hour))
	row := r.Row(c, now)
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"kubernetes", "10.43.0.0/16,fd00:43::/112", "2d1h"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
}
