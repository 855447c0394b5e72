package resourceclaimtemplates

import (
	"reflect"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// template is the e2e CRUD test's template.
func template() *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: "dra-1234"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "req-0", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "dra.example.com"}}},
		}}},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "resource.k8s.io/v1" || r.Resource != "resourceclaimtemplates" || r.Kind != "ResourceClaimTemplate" ||
		r.SingularName != "resourceclaimtemplate" || !r.Namespaced || r.HasStatus || r.ShortNames != nil || r.Categories != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.New().(*resourcev1.ResourceClaimTemplate); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*resourcev1.ResourceClaimTemplateList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*resourcev1.ResourceClaimTemplate)
		want   []want
	}{
		{"e2e", func(*resourcev1.ResourceClaimTemplate) {}, nil},
		{"labels and annotations for the claims", func(rct *resourcev1.ResourceClaimTemplate) {
			rct.Spec.ObjectMeta = metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"}}
		}, nil},
		{"other metadata for the claims", func(rct *resourcev1.ResourceClaimTemplate) {
			rct.Spec.ObjectMeta = metav1.ObjectMeta{Name: "claim", Labels: map[string]string{"-": "x"}, Finalizers: []string{"f"}}
		}, []want{
			{"FieldValueInvalid spec.metadata.labels", "name part must consist of"},
			{"FieldValueForbidden spec.metadata.name", "cannot be set"},
			{"FieldValueForbidden spec.metadata.finalizers", "cannot be set"},
		}},
		{"claim spec", func(rct *resourcev1.ResourceClaimTemplate) {
			rct.Spec.Spec.Devices.Requests[0].Exactly.Count = -2
		}, []want{{"FieldValueInvalid spec.spec.devices.requests[0].exactly.count", "must be greater than zero"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rct := template()
			tt.modify(rct)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), rct), tt.want...)
		})
	}

	rct := template()
	rct.Spec.Spec.Devices.Requests[0].Exactly.DerivedAttributes = []resourcev1.DeviceDerivedAttribute{{Name: "a.io/b", Expression: "1"}}
	registrytest.ExpectWant(t, registrytest.Create(Resource(), rct))
	if e := rct.Spec.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 || e.DerivedAttributes != nil {
		t.Errorf("request after create: %+v", e)
	}
}

func TestUpdate(t *testing.T) {
	old := template()
	registrytest.ExpectWant(t, registrytest.Create(Resource(), old))
	rct := template()
	rct.Labels = map[string]string{"test.dra.example.com": "test"}
	registrytest.ExpectWant(t, registrytest.Update(Resource(), rct, old))

	rct = old.DeepCopy()
	rct.Spec.Spec.Devices.Requests[0].Name = "req-1"
	registrytest.ExpectWant(t, registrytest.Update(Resource(), rct, old), want{"FieldValueInvalid spec", "field is immutable"})

	// The spec is checked again whole, as upstream.
	rct = old.DeepCopy()
	rct.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName = "Bad"
	registrytest.ExpectWant(t, registrytest.Update(Resource(), rct, old),
		want{"FieldValueInvalid spec.spec.devices.requests[0].exactly.deviceClassName", "RFC 1123 subdomain"},
		want{"FieldValueInvalid spec", "field is immutable"})
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	rct := template()
	rct.CreationTimestamp = created
	row := r.Row(rct, created.Add(26*time.Hour))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"test", "26h"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
}
