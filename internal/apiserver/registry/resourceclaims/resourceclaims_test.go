package resourceclaims

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// claim is the e2e CRUD test's claim, as a client sends it.
func claim() *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: "dra-1234"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name:    "req-0",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "dra.example.com"},
		}}}},
	}
}

// stored is claim as created.
func stored(t *testing.T) *resourcev1.ResourceClaim {
	c := claim()
	registrytest.ExpectWant(t, registrytest.Create(Resource(), c))
	return c
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "resource.k8s.io/v1" || r.Resource != "resourceclaims" || r.Kind != "ResourceClaim" ||
		r.SingularName != "resourceclaim" || !r.Namespaced || !r.HasStatus || r.ShortNames != nil || r.Categories != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.New().(*resourcev1.ResourceClaim); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*resourcev1.ResourceClaimList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestCreate(t *testing.T) {
	c := claim()
	c.Generation = 1
	c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1"}}
	c.Spec.Devices.Requests[0].Exactly.DerivedAttributes = []resourcev1.DeviceDerivedAttribute{{Name: "a.io/b", Expression: "1"}}
	registrytest.ExpectWant(t, registrytest.Create(Resource(), c))
	e := c.Spec.Devices.Requests[0].Exactly
	if e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 || e.DerivedAttributes != nil {
		t.Errorf("request after create: %+v", e)
	}
	if !reflect.DeepEqual(c.Status, resourcev1.ResourceClaimStatus{}) || c.Generation != 0 {
		t.Errorf("status %+v, generation %d; want none", c.Status, c.Generation)
	}

	c = claim()
	c.Spec.Devices.Requests[0].Exactly.DeviceClassName = ""
	registrytest.ExpectWant(t, registrytest.Create(Resource(), c), want{"FieldValueRequired spec.devices.requests[0].exactly.deviceClassName", ""})
}

func TestUpdate(t *testing.T) {
	old := stored(t)
	c := old.DeepCopy()
	c.Labels = map[string]string{"test.dra.example.com": "test"}
	registrytest.ExpectWant(t, registrytest.Update(Resource(), c, old))

	// What the client sends is defaulted first: leaving out defaults is no change.
	c = claim()
	c.ResourceVersion = "5"
	registrytest.ExpectWant(t, registrytest.Update(Resource(), c, old))

	c = old.DeepCopy()
	c.Spec.Devices.Requests[0].Exactly.Count = 2
	registrytest.ExpectWant(t, registrytest.Update(Resource(), c, old), want{"FieldValueInvalid spec", "field is immutable"})
}

// statusUpdate runs what the handlers run on a write through /status
// (after they put back the stored spec).
func statusUpdate(obj, old *resourcev1.ResourceClaim) field.ErrorList {
	r := Resource()
	r.Default(obj)
	r.PrepareForUpdate(obj, old)
	return r.ValidateStatusUpdate(obj, old)
}

func allocation() *resourcev1.AllocationResult {
	return &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "req-0", Driver: "dra.example.com", Pool: "node-1", Device: "gpu-0"}},
			Config: []resourcev1.DeviceAllocationConfiguration{{Source: resourcev1.AllocationConfigSourceClass,
				DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
					Driver: "dra.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"a":1}`)}}}}},
		},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}},
		}}}},
	}
}

func TestStatusUpdate(t *testing.T) {
	pod := resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: "p", UID: "8f2b8a1e-0c5a-4a55-9b36-7d0d8b1c2f11"}
	tests := []struct {
		name   string
		stored func(*resourcev1.ResourceClaim)
		modify func(*resourcev1.ResourceClaim)
		want   []want
	}{
		{"e2e: nothing allocated", func(*resourcev1.ResourceClaim) {}, func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = &resourcev1.AllocationResult{}
		}, nil},
		{"allocated and reserved", func(*resourcev1.ResourceClaim) {}, func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = allocation()
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{pod}
			c.Status.Devices = []resourcev1.AllocatedDeviceStatus{{Driver: "dra.example.com", Pool: "node-1", Device: "gpu-0",
				Conditions:  []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Prepared", LastTransitionTime: metav1.Now()}},
				Data:        &runtime.RawExtension{Raw: []byte(`{"uuid":"x"}`)},
				NetworkData: &resourcev1.NetworkDeviceData{InterfaceName: "eth1", IPs: []string{"10.9.8.7/24"}}}}
		}, nil},
		{"reserved, not allocated", func(*resourcev1.ResourceClaim) {}, func(c *resourcev1.ResourceClaim) {
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{pod, pod, {}}
		}, []want{
			{"FieldValueRequired status.reservedFor[2].resource", ""},
			{"FieldValueRequired status.reservedFor[2].name", ""},
			{"FieldValueRequired status.reservedFor[2].uid", ""},
			{"FieldValueDuplicate status.reservedFor[1]", ""},
			{"FieldValueForbidden status.reservedFor", "may not be specified when `allocated` is not set"},
		}},
		{"allocation is immutable", func(c *resourcev1.ResourceClaim) { c.Status.Allocation = allocation() }, func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation.Devices.Results[0].Device = "gpu-1"
		}, []want{{"FieldValueInvalid status.allocation", "field is immutable"}}},
		{"deallocation", func(c *resourcev1.ResourceClaim) { c.Status.Allocation = allocation() }, func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = nil
		}, nil},
		{"no new consumer while deleted", func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = allocation()
			c.DeletionTimestamp = ptr.To(metav1.Now())
		}, func(c *resourcev1.ResourceClaim) {
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{pod}
		}, []want{{"FieldValueForbidden status.reservedFor", "new entries may not be added"}}},
		{"bad results", func(*resourcev1.ResourceClaim) {}, func(c *resourcev1.ResourceClaim) {
			a := allocation()
			a.Devices.Results = append(a.Devices.Results, resourcev1.DeviceRequestAllocationResult{Request: "req-1", Driver: "", Pool: "", Device: "GPU",
				ShareID: ptr.To(types.UID("ABC")), Tolerations: []resourcev1.DeviceToleration{{Key: "k"}}})
			a.Devices.Config[0].Source = "FromNowhere"
			a.NodeSelector.NodeSelectorTerms = nil
			c.Status.Allocation = a
		}, []want{
			{"FieldValueInvalid status.allocation.devices.results[1].request", "must be the name of a request"},
			{"FieldValueRequired status.allocation.devices.results[1].driver", ""},
			{"FieldValueRequired status.allocation.devices.results[1].pool", ""},
			{"FieldValueInvalid status.allocation.devices.results[1].device", "RFC 1123 label"},
			{"FieldValueInvalid status.allocation.devices.results[1].shareID", ""},
			{"FieldValueNotSupported status.allocation.devices.config[0].source", `supported values: "FromClaim", "FromClass"`},
			{"FieldValueRequired status.allocation.nodeSelector.nodeSelectorTerms", ""},
		}},
		{"status of a device not allocated", func(*resourcev1.ResourceClaim) {}, func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = allocation()
			c.Status.Devices = []resourcev1.AllocatedDeviceStatus{
				{Driver: "dra.example.com", Pool: "node-1", Device: "gpu-7", Data: &runtime.RawExtension{Raw: []byte(`"x"`)},
					NetworkData: &resourcev1.NetworkDeviceData{IPs: []string{"10.0.0.1"}}},
				{Driver: "dra.example.com", Pool: "node-1", Device: "gpu-0", Conditions: []metav1.Condition{{Type: "Ready"}}},
				{Driver: "dra.example.com", Pool: "node-1", Device: "gpu-0"},
			}
		}, []want{
			{"FieldValueInvalid status.devices[0]", "must be an allocated device in the claim"},
			{"FieldValueInvalid status.devices[0].data", "must be a valid JSON object"},
			{"FieldValueInvalid status.devices[0].networkData.ips[0]", ""},
			{"FieldValueRequired status.devices[1].conditions[0].status", ""},
			{"FieldValueRequired status.devices[1].conditions[0].lastTransitionTime", ""},
			{"FieldValueRequired status.devices[1].conditions[0].reason", ""},
			{"FieldValueDuplicate status.devices[2]", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t)
			tt.stored(old)
			c := old.DeepCopy()
			tt.modify(c)
			registrytest.ExpectWant(t, statusUpdate(c, old), tt.want...)
		})
	}
}

func TestDeallocationDropsDeviceStatus(t *testing.T) {
	old := stored(t)
	old.Status.Allocation = allocation()
	old.Status.Devices = []resourcev1.AllocatedDeviceStatus{{Driver: "dra.example.com", Pool: "node-1", Device: "gpu-0"}}
	c := old.DeepCopy()
	c.Status.Allocation.Devices.Results[0].SkipNodeOperations = []resourcev1.SkipNodeOperation{resourcev1.SkipNodeOperationAll}
	// Dropped before the allocation is compared with the stored one.
	registrytest.ExpectWant(t, statusUpdate(c, old))
	if c.Status.Allocation.Devices.Results[0].SkipNodeOperations != nil || len(c.Status.Devices) != 1 {
		t.Errorf("optional node operations (alpha) kept or device status dropped: %+v", c.Status)
	}
	c = old.DeepCopy()
	c.Status.Allocation = nil
	registrytest.ExpectWant(t, statusUpdate(c, old))
	if c.Status.Devices != nil {
		t.Errorf("device status kept after deallocation: %+v", c.Status.Devices)
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	tests := []struct {
		name   string
		modify func(*resourcev1.ResourceClaim)
		state  string
	}{
		{"pending", func(*resourcev1.ResourceClaim) {}, "pending"},
		{"allocated", func(c *resourcev1.ResourceClaim) { c.Status.Allocation = allocation() }, "allocated"},
		{"reserved", func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = allocation()
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1"}}
		}, "allocated,reserved"},
		{"deleted", func(c *resourcev1.ResourceClaim) { c.DeletionTimestamp = &created }, "deleted"},
		{"deleted, allocated", func(c *resourcev1.ResourceClaim) {
			c.DeletionTimestamp = &created
			c.Status.Allocation = allocation()
		}, "deleted,allocated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claim()
			c.CreationTimestamp = created
			tt.modify(c)
			row := r.Row(c, created.Add(3*time.Hour))
			registrytest.CheckTable(t, r, row)
			if want := []interface{}{"test", tt.state, "3h"}; !reflect.DeepEqual(row, want) {
				t.Errorf("row = %#v, want %#v", row, want)
			}
		})
	}
}
