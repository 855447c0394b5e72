package drautil

import (
	"fmt"
	"reflect"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

// spec is the claim spec of the e2e CRUD tests, defaulted.
func spec() *resourcev1.ResourceClaimSpec {
	s := &resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name:    "req-0",
		Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "dra.example.com"},
	}}}}
	DefaultClaimSpec(s)
	return s
}

func TestDefaultClaimSpec(t *testing.T) {
	s := &resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
		{Name: "a", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c", Tolerations: []resourcev1.DeviceToleration{{Key: "k"}}}},
		{Name: "b", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c", AllocationMode: resourcev1.DeviceAllocationModeAll}},
		{Name: "c", FirstAvailable: []resourcev1.DeviceSubRequest{
			{Name: "big", DeviceClassName: "c", Count: 2},
			{Name: "small", DeviceClassName: "c", Tolerations: []resourcev1.DeviceToleration{{Key: "k"}}},
		}},
	}}}
	DefaultClaimSpec(s)
	r := s.Devices.Requests
	got := []any{r[0].Exactly.AllocationMode, r[0].Exactly.Count, r[0].Exactly.Tolerations[0].Operator,
		r[1].Exactly.AllocationMode, r[1].Exactly.Count,
		r[2].FirstAvailable[0].AllocationMode, r[2].FirstAvailable[0].Count, r[2].FirstAvailable[1].Count, r[2].FirstAvailable[1].Tolerations[0].Operator}
	want := []any{resourcev1.DeviceAllocationModeExactCount, int64(1), resourcev1.DeviceTolerationOpEqual,
		resourcev1.DeviceAllocationModeAll, int64(0),
		resourcev1.DeviceAllocationModeExactCount, int64(2), int64(1), resourcev1.DeviceTolerationOpEqual}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %v, want %v", got, want)
	}
}

func TestDropDisabledClaimFields(t *testing.T) {
	s := spec()
	s.Devices.Requests[0].Exactly.DerivedAttributes = []resourcev1.DeviceDerivedAttribute{{Name: "a.io/b", Expression: "1"}}
	s.Devices.Requests = append(s.Devices.Requests, resourcev1.DeviceRequest{Name: "b", FirstAvailable: []resourcev1.DeviceSubRequest{
		{Name: "s", DeviceClassName: "c", DerivedAttributes: []resourcev1.DeviceDerivedAttribute{{Name: "a.io/b", Expression: "1"}}},
	}})
	DropDisabledClaimFields(s)
	if s.Devices.Requests[0].Exactly.DerivedAttributes != nil || s.Devices.Requests[1].FirstAvailable[0].DerivedAttributes != nil {
		t.Errorf("derived attributes kept: %+v", s.Devices.Requests)
	}
}

func TestValidateClaimSpec(t *testing.T) {
	params := runtime.RawExtension{Raw: []byte(`{"a":1}`)}
	tests := []struct {
		name   string
		modify func(*resourcev1.ResourceClaimSpec)
		want   []want
	}{
		{"e2e", func(*resourcev1.ResourceClaimSpec) {}, nil},
		{"no requests", func(s *resourcev1.ResourceClaimSpec) { s.Devices.Requests = nil }, nil},
		{"everything", func(s *resourcev1.ResourceClaimSpec) {
			s.Devices.Requests = append(s.Devices.Requests, resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
				{Name: "large", DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeAll,
					Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.example.com"].memory > 10`}}}},
				{Name: "small", DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
					Tolerations: []resourcev1.DeviceToleration{{Operator: resourcev1.DeviceTolerationOpExists}}},
			}})
			s.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true)
			s.Devices.Constraints = []resourcev1.DeviceConstraint{
				{Requests: []string{"req-0", "gpu/large"}, MatchAttribute: ptr.To[resourcev1.FullyQualifiedName]("dra.example.com/numa")},
				{DistinctAttribute: ptr.To[resourcev1.FullyQualifiedName]("dra.example.com/pci")},
			}
			s.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: []string{"gpu"},
				DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: params}}}}
		}, nil},
		{"request names", func(s *resourcev1.ResourceClaimSpec) {
			s.Devices.Requests = append(s.Devices.Requests, s.Devices.Requests[0], resourcev1.DeviceRequest{Name: "Bad_Name", Exactly: s.Devices.Requests[0].Exactly})
		}, []want{
			{"FieldValueInvalid spec.devices.requests[2].name", "RFC 1123 label"},
			{"FieldValueDuplicate spec.devices.requests[1]", ""},
		}},
		{"neither or both kinds", func(s *resourcev1.ResourceClaimSpec) {
			s.Devices.Requests = []resourcev1.DeviceRequest{
				{Name: "a"},
				{Name: "b", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c", AllocationMode: "ExactCount", Count: 1},
					FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "s", DeviceClassName: "c"}}},
			}
		}, []want{
			{"FieldValueRequired spec.devices.requests[0]", "exactly one of `exactly` or `firstAvailable` is required"},
			{"FieldValueInvalid spec.devices.requests[1]", "but multiple fields are set"},
		}},
		{"exact request", func(s *resourcev1.ResourceClaimSpec) {
			e := s.Devices.Requests[0].Exactly
			e.DeviceClassName = ""
			e.AllocationMode, e.Count = resourcev1.DeviceAllocationModeAll, 3
			e.Selectors = []resourcev1.DeviceSelector{{}}
			e.Tolerations = []resourcev1.DeviceToleration{{Operator: "Near"}}
		}, []want{
			{"FieldValueRequired spec.devices.requests[0].exactly.deviceClassName", ""},
			{"FieldValueRequired spec.devices.requests[0].exactly.selectors[0].cel", ""},
			{"FieldValueInvalid spec.devices.requests[0].exactly.count", "must not be specified when allocationMode is 'All'"},
			{"FieldValueNotSupported spec.devices.requests[0].exactly.tolerations[0].operator", ""},
		}},
		{"allocation mode", func(s *resourcev1.ResourceClaimSpec) {
			s.Devices.Requests[0].Exactly.AllocationMode = "Some"
			s.Devices.Requests = append(s.Devices.Requests, resourcev1.DeviceRequest{Name: "b", FirstAvailable: []resourcev1.DeviceSubRequest{
				{Name: "s", DeviceClassName: "Class", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: -1},
				{Name: "s", DeviceClassName: "c", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
			}})
		}, []want{
			{"FieldValueNotSupported spec.devices.requests[0].exactly.allocationMode", `supported values: "All", "ExactCount"`},
			{"FieldValueInvalid spec.devices.requests[1].firstAvailable[0].deviceClassName", "RFC 1123 subdomain"},
			{"FieldValueInvalid spec.devices.requests[1].firstAvailable[0].count", "must be greater than zero"},
			{"FieldValueDuplicate spec.devices.requests[1].firstAvailable[1]", ""},
		}},
		{"constraints", func(s *resourcev1.ResourceClaimSpec) {
			s.Devices.Constraints = []resourcev1.DeviceConstraint{
				{Requests: []string{"req-0", "req-0", "nope", "req-0/sub", "a/b/c"}, MatchAttribute: ptr.To[resourcev1.FullyQualifiedName]("numa")},
				{},
			}
		}, []want{
			{"FieldValueInvalid spec.devices.constraints[0].requests[2]", "must be the name of a request in the claim"},
			{"FieldValueInvalid spec.devices.constraints[0].requests[3]", "must be the name of a request in the claim"},
			{"FieldValueInvalid spec.devices.constraints[0].requests[4]", "must be the name of a request in the claim"},
			{"FieldValueDuplicate spec.devices.constraints[0].requests[1]", ""},
			{"FieldValueInvalid spec.devices.constraints[0].matchAttribute", "a fully qualified name must be a domain"},
			{"FieldValueRequired spec.devices.constraints[1]", `exactly one of "matchAttribute" or "distinctAttribute" is required`},
		}},
		{"config", func(s *resourcev1.ResourceClaimSpec) {
			s.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: []string{"other"}}}
		}, []want{
			{"FieldValueInvalid spec.devices.config[0].requests[0]", "must be the name of a request in the claim"},
			{"FieldValueRequired spec.devices.config[0].opaque", ""},
		}},
		{"33 requests", func(s *resourcev1.ResourceClaimSpec) {
			for i := 1; i <= 32; i++ {
				r := s.Devices.Requests[0]
				r.Name = fmt.Sprintf("r-%d", i)
				s.Devices.Requests = append(s.Devices.Requests, r)
			}
		}, []want{{"FieldValueTooMany spec.devices.requests", "at most 32"}}},
		{"9 subrequests", func(s *resourcev1.ResourceClaimSpec) {
			s.Devices.Requests[0].Exactly = nil
			s.Devices.Requests[0].FirstAvailable = make([]resourcev1.DeviceSubRequest, 9)
		}, []want{{"FieldValueTooMany spec.devices.requests[0].firstAvailable", "at most 8"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec()
			tt.modify(s)
			registrytest.ExpectWant(t, ValidateClaimSpec(s, field.NewPath("spec")), tt.want...)
		})
	}
}

func TestRequestNames(t *testing.T) {
	names := GatherRequestNames(&resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
		{Name: "a"}, {Name: "b", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "x"}}},
	}})
	for ref, want := range map[string]bool{"a": true, "b": true, "b/x": true, "a/x": false, "b/y": false, "c": false, "b/x/z": false, "": false} {
		if got := names.Has(ref); got != want {
			t.Errorf("Has(%q) = %v, want %v", ref, got, want)
		}
	}
}
