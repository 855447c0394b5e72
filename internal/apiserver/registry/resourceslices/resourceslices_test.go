package resourceslices

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// slice is the e2e CRUD test's slice: an empty pool on one node.
func slice() *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "test-dra-1234"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   "dra.example.com",
			Pool:     resourcev1.ResourcePool{Name: "cluster", Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To("no-such-node"),
		},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "resource.k8s.io/v1" || r.Resource != "resourceslices" || r.Kind != "ResourceSlice" ||
		r.SingularName != "resourceslice" || r.Namespaced || r.HasStatus || r.ShortNames != nil || r.Categories != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.New().(*resourcev1.ResourceSlice); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*resourcev1.ResourceSliceList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
	s := slice()
	want := fields.Set{"spec.nodeName": "no-such-node", "spec.driver": "dra.example.com", "spec.pool.name": "cluster"}
	if got := r.SelectableFields(s); !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	s.Spec.NodeName = nil
	if got := r.SelectableFields(s)["spec.nodeName"]; got != "" {
		t.Errorf("spec.nodeName without a node = %q", got)
	}
}

func gpu(name string) resourcev1.Device {
	return resourcev1.Device{
		Name: name,
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"model":                   {StringValue: ptr.To("a100")},
			"dra.example.com/index":   {IntValue: ptr.To[int64](0)},
			"dra.example.com/healthy": {BoolValue: ptr.To(true)},
			"driverVersion":           {VersionValue: ptr.To("1.2.3-rc.1+build.5")},
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("40Gi")}},
	}
}

func TestCreate(t *testing.T) {
	selector := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
	}}}}
	tests := []struct {
		name   string
		modify func(*resourcev1.ResourceSlice)
		want   []want
	}{
		{"e2e", func(*resourcev1.ResourceSlice) {}, nil},
		{"e2e, with a device", func(s *resourcev1.ResourceSlice) { s.Spec.Devices = []resourcev1.Device{{Name: "device-0"}} }, nil},
		{"devices", func(s *resourcev1.ResourceSlice) {
			g := gpu("gpu-1")
			g.Taints = []resourcev1.DeviceTaint{{Key: "example.com/ecc", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
			g.BindingConditions, g.BindingFailureConditions = []string{"example.com/attached"}, []string{"example.com/failed"}
			g.ConsumesCounters = []resourcev1.DeviceCounterConsumption{{CounterSet: "memory", Counters: map[string]resourcev1.Counter{"mem": {Value: resource.MustParse("1Gi")}}}}
			s.Spec.Devices = []resourcev1.Device{gpu("gpu-0"), g}
		}, nil},
		{"shared counters on all nodes", func(s *resourcev1.ResourceSlice) {
			s.Spec.NodeName, s.Spec.AllNodes = nil, ptr.To(true)
			s.Spec.SharedCounters = []resourcev1.CounterSet{{Name: "memory", Counters: map[string]resourcev1.Counter{"mem": {Value: resource.MustParse("80Gi")}}}}
		}, nil},
		{"node selector", func(s *resourcev1.ResourceSlice) { s.Spec.NodeName, s.Spec.NodeSelector = nil, selector }, nil},
		{"node selector of two terms", func(s *resourcev1.ResourceSlice) {
			s.Spec.NodeName = nil
			s.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: append(selector.NodeSelectorTerms, selector.NodeSelectorTerms...)}
		}, []want{{"FieldValueInvalid spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector term"}}},
		{"no node selection", func(s *resourcev1.ResourceSlice) { s.Spec.NodeName = nil }, []want{
			{"FieldValueRequired spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"},
		}},
		{"empty and false node selection", func(s *resourcev1.ResourceSlice) {
			s.Spec.NodeName, s.Spec.AllNodes, s.Spec.PerDeviceNodeSelection = ptr.To(""), ptr.To(false), ptr.To(false)
		}, []want{
			{"FieldValueInvalid spec.nodeName", "must be either unset or set to a non-empty string"},
			{"FieldValueInvalid spec.allNodes", "must be either unset or set to true"},
			{"FieldValueInvalid spec.perDeviceNodeSelection", "must be either unset or set to true"},
			{"FieldValueRequired spec", "exactly one of"},
		}},
		{"two node selections", func(s *resourcev1.ResourceSlice) { s.Spec.AllNodes = ptr.To(true) }, []want{
			{"FieldValueInvalid spec", "but multiple fields are set"},
		}},
		{"driver and pool", func(s *resourcev1.ResourceSlice) {
			s.Spec.Driver = ""
			s.Spec.Pool = resourcev1.ResourcePool{Name: "A", Generation: -1}
			s.Spec.NodeName = ptr.To("Node_1")
		}, []want{
			{"FieldValueRequired spec.driver", ""},
			{"FieldValueInvalid spec.pool.name", "RFC 1123 subdomain"},
			{"FieldValueInvalid spec.pool.resourceSliceCount", "must be greater than zero"},
			{"FieldValueInvalid spec.pool.generation", "must be greater than or equal to zero"},
			{"FieldValueInvalid spec.nodeName", "RFC 1123 subdomain"},
		}},
		{"counters and devices", func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices = []resourcev1.Device{{Name: "d"}}
			s.Spec.SharedCounters = []resourcev1.CounterSet{{Name: "c", Counters: map[string]resourcev1.Counter{"c": {}}}, {Name: "c"}}
		}, []want{
			{"FieldValueInvalid spec", "only one of `sharedCounters` or `devices` is allowed"},
			{"FieldValueRequired spec.sharedCounters[1].counters", ""},
			{"FieldValueDuplicate spec.sharedCounters[1]", ""},
		}},
		{"device names", func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices = []resourcev1.Device{{Name: "d"}, {Name: "d"}, {Name: "GPU"}}
		}, []want{
			{"FieldValueInvalid spec.devices[2].name", "RFC 1123 label"},
			{"FieldValueDuplicate spec.devices[1]", ""},
		}},
		{"attributes", func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices = []resourcev1.Device{{Name: "d", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"a-b":  {BoolValue: ptr.To(true)},
				"both": {BoolValue: ptr.To(true), IntValue: ptr.To[int64](1)},
				"none": {},
				"long": {StringValue: ptr.To(strings.Repeat("x", 65))},
				"ver":  {VersionValue: ptr.To("v1.2")},
			}}}
		}, []want{
			{"FieldValueInvalid spec.devices[0].attributes", "C identifier"},
			{"FieldValueInvalid spec.devices[0].attributes[both]", "exactly one value must be specified"},
			{"FieldValueTooLong spec.devices[0].attributes[long].string", "64"},
			{"FieldValueInvalid spec.devices[0].attributes[none]", "exactly one value must be specified"},
			{"FieldValueInvalid spec.devices[0].attributes[ver].version", "semver.org spec 2.0.0"},
		}},
		{"33 attributes and capacities", func(s *resourcev1.ResourceSlice) {
			d := resourcev1.Device{Name: "d", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{},
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"c": {Value: resource.MustParse("1")}}}
			for i := 0; i < 32; i++ {
				d.Attributes[resourcev1.QualifiedName(fmt.Sprintf("a%d", i))] = resourcev1.DeviceAttribute{IntValue: ptr.To(int64(i))}
			}
			s.Spec.Devices = []resourcev1.Device{d}
		}, []want{{"FieldValueInvalid spec.devices[0]", "the total number of attributes and capacities must not exceed 32"}}},
		{"taints, counters, bindings", func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices = []resourcev1.Device{{Name: "d",
				Taints: []resourcev1.DeviceTaint{{Key: "k", Effect: "Maybe"}},
				ConsumesCounters: []resourcev1.DeviceCounterConsumption{
					{CounterSet: "", Counters: map[string]resourcev1.Counter{"Bad": {}}},
					{CounterSet: "x"}, {CounterSet: "x", Counters: map[string]resourcev1.Counter{"a": {}}},
				},
				BindingConditions: []string{"a"},
			}}
		}, []want{
			{"FieldValueNotSupported spec.devices[0].taints[0].effect", ""},
			{"FieldValueTooMany spec.devices[0].consumesCounters", "at most 2"},
			{"FieldValueInvalid spec.devices[0].bindingFailureConditions", "are required to use bindingConditions"},
		}},
		{"counter consumption", func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices = []resourcev1.Device{{Name: "d", ConsumesCounters: []resourcev1.DeviceCounterConsumption{
				{CounterSet: "", Counters: map[string]resourcev1.Counter{"Bad": {}}}, {CounterSet: "x"},
			}}}
		}, []want{
			{"FieldValueRequired spec.devices[0].consumesCounters[0].counterSet", ""},
			{"FieldValueInvalid spec.devices[0].consumesCounters[0].counters", "RFC 1123 label"},
			{"FieldValueRequired spec.devices[0].consumesCounters[1].counters", ""},
		}},
		{"per-device node selection", func(s *resourcev1.ResourceSlice) {
			s.Spec.NodeName, s.Spec.PerDeviceNodeSelection = nil, ptr.To(true)
			s.Spec.Devices = []resourcev1.Device{
				{Name: "a", NodeName: ptr.To("node-1")},
				{Name: "b", NodeSelector: selector},
				{Name: "c", AllNodes: ptr.To(true)},
				{Name: "d"},
				{Name: "e", NodeName: ptr.To("node-1"), AllNodes: ptr.To(true)},
			}
		}, []want{
			{"FieldValueRequired spec.devices[3]", "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required"},
			{"FieldValueInvalid spec.devices[4]", "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required"},
		}},
		{"per-device node selection not asked for", func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices = []resourcev1.Device{{Name: "a", NodeName: ptr.To("node-1")}}
		}, []want{{"FieldValueInvalid spec.devices[0]", "can only be set if `perDeviceNodeSelection` is set to true"}}},
		{"129 devices", func(s *resourcev1.ResourceSlice) {
			for i := 0; i < 129; i++ {
				s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("d%d", i)})
			}
		}, []want{{"FieldValueTooMany spec.devices", "at most 128"}}},
		{"65 devices with taints", func(s *resourcev1.ResourceSlice) {
			for i := 0; i < 65; i++ {
				s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("d%d", i),
					Taints: []resourcev1.DeviceTaint{{Key: "k", Effect: resourcev1.DeviceTaintEffectNone}}})
			}
		}, []want{{"FieldValueTooMany spec.devices", "at most 64"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := slice()
			tt.modify(s)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), s), tt.want...)
		})
	}
}

func TestDefaultsAndDisabledFields(t *testing.T) {
	s := slice()
	s.Generation = 4
	s.Spec.SkipNodeOperations = []resourcev1.SkipNodeOperation{resourcev1.SkipNodeOperationAll}
	s.Spec.PartitionTypeAttribute = ptr.To[resourcev1.FullyQualifiedName]("dra.example.com/type")
	s.Spec.Devices = []resourcev1.Device{{
		Name:                     "d",
		Taints:                   []resourcev1.DeviceTaint{{Key: "k", Effect: resourcev1.DeviceTaintEffectNone}},
		Attributes:               map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"list": {IntValues: []int64{1}}, "one": {IntValue: ptr.To[int64](1)}},
		NodeAllocatableResources: map[corev1.ResourceName]resourcev1.NodeAllocatableResource{"cpu": {}},
		ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: "c", Counters: map[string]resourcev1.Counter{"a": {}},
			CompatibilityGroups: []string{"g"}}},
	}}
	// A list-type attribute (alpha) is dropped, leaving no value.
	registrytest.ExpectWant(t, registrytest.Create(Resource(), s), want{"FieldValueInvalid spec.devices[0].attributes[list]", "exactly one value"})
	d := s.Spec.Devices[0]
	if s.Generation != 1 || s.Spec.SkipNodeOperations != nil || s.Spec.PartitionTypeAttribute != nil || d.NodeAllocatableResources != nil ||
		d.Attributes["list"].IntValues != nil || d.ConsumesCounters[0].CompatibilityGroups != nil {
		t.Errorf("after create: generation %d, spec %+v", s.Generation, s.Spec)
	}
	if d.Taints[0].TimeAdded == nil {
		t.Errorf("taint without timeAdded")
	}
}

func TestUpdate(t *testing.T) {
	r := Resource()
	old := slice()
	old.Spec.Devices = []resourcev1.Device{{Name: "d", Taints: []resourcev1.DeviceTaint{{Key: "k", Effect: "Stale"}},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"c": {Value: resource.MustParse("1"), RequestPolicy: &resourcev1.CapacityRequestPolicy{}}}}}
	old.Generation = 3
	r.Default(old)

	// The e2e update: a device more, the generation moves on. The stored
	// device's taints and capacity are not checked again.
	s := old.DeepCopy()
	s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "device-0"})
	registrytest.ExpectWant(t, registrytest.Update(r, s, old))
	if s.Generation != 4 {
		t.Errorf("generation = %d, want 4", s.Generation)
	}
	s = old.DeepCopy()
	s.Labels = map[string]string{"a": "b"}
	registrytest.ExpectWant(t, registrytest.Update(r, s, old))
	if s.Generation != 3 {
		t.Errorf("generation after a label = %d, want 3", s.Generation)
	}

	s = old.DeepCopy()
	s.Spec.Driver, s.Spec.Pool.Name, s.Spec.NodeName = "other.example.com", "other", ptr.To("other-node")
	s.Spec.Devices[0].Taints[0].Value = "v"
	s.Spec.Devices[0].Capacity["c"] = resourcev1.DeviceCapacity{Value: resource.MustParse("2"), RequestPolicy: &resourcev1.CapacityRequestPolicy{}}
	registrytest.ExpectWant(t, registrytest.Update(r, s, old),
		want{"FieldValueInvalid spec.pool.name", "field is immutable"},
		want{"FieldValueInvalid spec.driver", "field is immutable"},
		want{"FieldValueInvalid spec.nodeName", "field is immutable"},
		want{"FieldValueForbidden spec.devices[0].capacity[c].requestPolicy", "allowMultipleAllocations must be true"},
		want{"FieldValueNotSupported spec.devices[0].taints[0].effect", ""})
}

func TestRequestPolicy(t *testing.T) {
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	tests := []struct {
		name   string
		policy resourcev1.CapacityRequestPolicy
		want   []want
	}{
		{"valid values", resourcev1.CapacityRequestPolicy{Default: q("1Gi"), ValidValues: []resource.Quantity{resource.MustParse("1Gi"), resource.MustParse("2Gi")}}, nil},
		{"range", resourcev1.CapacityRequestPolicy{Default: q("2Gi"), ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("1Gi"), Max: q("9Gi"), Step: q("1Gi")}}, nil},
		{"fractional range", resourcev1.CapacityRequestPolicy{Default: q("1.5"), ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("500m"), Step: q("250m")}}, nil},
		{"no policy kind", resourcev1.CapacityRequestPolicy{Default: q("1")}, nil},
		{"both", resourcev1.CapacityRequestPolicy{Default: q("1Gi"), ValidValues: []resource.Quantity{resource.MustParse("1Gi")},
			ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("1Gi")}}, []want{{"FieldValueForbidden x.requestPolicy", "exactly one policy can be specified"}}},
		{"values without a default", resourcev1.CapacityRequestPolicy{ValidValues: []resource.Quantity{resource.MustParse("1Gi")}},
			[]want{{"FieldValueRequired x.requestPolicy.default", "required when validValues is defined"}}},
		{"bad values", resourcev1.CapacityRequestPolicy{Default: q("3Gi"), ValidValues: []resource.Quantity{
			resource.MustParse("2Gi"), resource.MustParse("1Gi"), resource.MustParse("1Gi"), resource.MustParse("50Gi")}}, []want{
			{"FieldValueInvalid x.requestPolicy.validValues[1]", "values must be sorted in ascending order"},
			{"FieldValueInvalid x.requestPolicy.validValues[3]", "option is larger than capacity value: 40Gi"},
			{"FieldValueDuplicate x.requestPolicy.validValues[2]", ""},
			{"FieldValueInvalid x.requestPolicy.validValues", "default value is not valid according to the requestPolicy"},
		}},
		{"range without min", resourcev1.CapacityRequestPolicy{Default: q("1"), ValidRange: &resourcev1.CapacityRequestPolicyRange{}},
			[]want{{"FieldValueRequired x.requestPolicy.validRange.min", ""}}},
		{"range out of order", resourcev1.CapacityRequestPolicy{Default: q("100Gi"), ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("50Gi"), Max: q("45Gi")}}, []want{
			{"FieldValueInvalid x.requestPolicy.validRange.min", "min is larger than capacity value"},
			{"FieldValueInvalid x.requestPolicy.validRange.max", "min is larger than max"},
			{"FieldValueInvalid x.requestPolicy.validRange.max", "max is larger than capacity value"},
			{"FieldValueInvalid x.requestPolicy.validRange.default", "default is more than max"},
		}},
		{"steps", resourcev1.CapacityRequestPolicy{Default: q("2Gi"), ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("1Gi"), Max: q("10Gi"), Step: q("4Gi")}}, []want{
			{"FieldValueInvalid x.requestPolicy.validRange.step", "value is not a multiple of a given step (4Gi) from (1Gi)"},
			{"FieldValueInvalid x.requestPolicy.validRange.step", "value is not a multiple of a given step (4Gi) from (1Gi)"},
		}},
		{"zero step", resourcev1.CapacityRequestPolicy{Default: q("1"), ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("1"), Step: q("0")}},
			[]want{{"FieldValueInvalid x.requestPolicy.validRange.step", "must be greater than zero"}}},
		{"micro", resourcev1.CapacityRequestPolicy{Default: q("1u"), ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: q("1u")}},
			[]want{
				{"FieldValueInvalid x.requestPolicy.validRange.default", "value cannot be represented as a milli value"},
				{"FieldValueInvalid x.requestPolicy.validRange.min", "value cannot be represented as a milli value"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := resourcev1.DeviceCapacity{Value: resource.MustParse("40Gi"), RequestPolicy: &tt.policy}
			registrytest.ExpectWant(t, validateCapacity(c, true, field.NewPath("x")), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	s := slice()
	s.CreationTimestamp = created
	row := r.Row(s, created.Add(5*time.Minute))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"test-dra-1234", "no-such-node", "dra.example.com", "cluster", "5m"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	s.Spec.NodeName = nil
	if got := r.Row(s, created.Time)[1]; got != "" {
		t.Errorf("node cell without a node = %#v", got)
	}
	var headers []string
	for _, c := range r.Columns {
		headers = append(headers, c.Name)
	}
	if !reflect.DeepEqual(headers, []string{"Name", "Node", "Driver", "Pool", "Age"}) {
		t.Errorf("kubectl get shows %v", headers)
	}
}
