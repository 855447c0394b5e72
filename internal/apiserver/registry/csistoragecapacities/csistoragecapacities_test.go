package csistoragecapacities

import (
	"reflect"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

// capacity is a capacity as the conformance test creates it (no topology,
// no capacity), with the given storage class.
func capacity(class string) *storagev1.CSIStorageCapacity {
	return &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: "csistoragecapacity-e2e-csc1", Namespace: "e2e", Labels: map[string]string{"test": "e2e"}},
		StorageClassName: class,
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "storage.k8s.io/v1" || r.Resource != "csistoragecapacities" || r.Kind != "CSIStorageCapacity" ||
		r.SingularName != "csistoragecapacity" || !r.Namespaced || r.HasStatus || r.ShortNames != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.NewList().(*storagev1.CSIStorageCapacityList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestValidate(t *testing.T) {
	with := func(change func(*storagev1.CSIStorageCapacity)) *storagev1.CSIStorageCapacity {
		c := capacity("e2e.example.com")
		change(c)
		return c
	}
	zone := &metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/zone": "a"}}
	tests := []struct {
		name string
		c    *storagev1.CSIStorageCapacity
		want []string
	}{
		{"conformance", capacity("e2e.example.com"), nil},
		{"topology and sizes", with(func(c *storagev1.CSIStorageCapacity) {
			c.NodeTopology, c.Capacity, c.MaximumVolumeSize = zone, ptr.To(resource.MustParse("10Gi")), ptr.To(resource.MustParse("1Gi"))
		}), nil},
		{"zero capacity", with(func(c *storagev1.CSIStorageCapacity) { c.Capacity = ptr.To(resource.MustParse("0")) }), nil},
		{"no storage class", capacity(""), []string{"FieldValueInvalid storageClassName"}},
		{"bad storage class", capacity("Fast_SSD"), []string{"FieldValueInvalid storageClassName"}},
		{"negative capacity", with(func(c *storagev1.CSIStorageCapacity) { c.Capacity = ptr.To(resource.MustParse("-1Gi")) }), []string{"FieldValueInvalid capacity"}},
		// Upstream does not check maximumVolumeSize.
		{"negative maximum volume size", with(func(c *storagev1.CSIStorageCapacity) { c.MaximumVolumeSize = ptr.To(resource.MustParse("-1Gi")) }), nil},
		{"bad topology key", with(func(c *storagev1.CSIStorageCapacity) {
			c.NodeTopology = &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}
		}), []string{"FieldValueInvalid nodeTopology.matchLabels"}},
		{"bad topology operator", with(func(c *storagev1.CSIStorageCapacity) {
			c.NodeTopology = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}}
		}), []string{"FieldValueInvalid nodeTopology.matchExpressions[0].operator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Create(Resource(), tt.c), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := capacity("e2e.example.com")
	old.Capacity = ptr.To(resource.MustParse("1Gi"))
	tests := []struct {
		name   string
		change func(*storagev1.CSIStorageCapacity)
		want   []string
	}{
		{"annotations and capacity", func(c *storagev1.CSIStorageCapacity) {
			c.Annotations, c.Capacity = map[string]string{"updated": "true"}, ptr.To(resource.MustParse("2Gi"))
		}, nil},
		{"storage class", func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "other" }, []string{"FieldValueInvalid storageClassName"}},
		{"topology", func(c *storagev1.CSIStorageCapacity) {
			c.NodeTopology = &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}
		}, []string{"FieldValueInvalid nodeTopology"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := old.DeepCopy()
			tt.change(c)
			registrytest.ExpectErrors(t, registrytest.Update(Resource(), c, old), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	c := capacity("e2e.example.com")
	if row, want := r.Row(c, time.Now()), []interface{}{"csistoragecapacity-e2e-csc1", "e2e.example.com", "<unset>"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	c.Capacity = ptr.To(resource.MustParse("10Gi"))
	row := r.Row(c, time.Now())
	registrytest.CheckTable(t, r, row)
	if row[2] != "10Gi" {
		t.Errorf("capacity cell %#v", row[2])
	}
}
