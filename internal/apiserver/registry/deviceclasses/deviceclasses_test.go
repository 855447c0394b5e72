package deviceclasses

import (
	"reflect"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

type want = registrytest.Want

// class is the e2e CRUD test's device class.
func class() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "test-dra-1234"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: "false"},
		}}},
	}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "resource.k8s.io/v1" || r.Resource != "deviceclasses" || r.Kind != "DeviceClass" ||
		r.SingularName != "deviceclass" || r.Namespaced || r.HasStatus || r.ShortNames != nil || r.Categories != nil {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.New().(*resourcev1.DeviceClass); !ok {
		t.Errorf("New() = %T", r.New())
	}
	if _, ok := r.NewList().(*resourcev1.DeviceClassList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*resourcev1.DeviceClass)
		want   []want
	}{
		{"e2e", func(*resourcev1.DeviceClass) {}, nil},
		{"config and extended resource", func(c *resourcev1.DeviceClass) {
			c.Spec.Config = []resourcev1.DeviceClassConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{}`)}},
			}}}
			c.Spec.ExtendedResourceName = ptr.To("example.com/gpu")
		}, nil},
		{"selector that does not compile", func(c *resourcev1.DeviceClass) { c.Spec.Selectors[0].CEL.Expression = "1 =" }, []want{
			{"FieldValueInvalid spec.selectors[0].cel.expression", "compilation failed"},
		}},
		{"config without opaque", func(c *resourcev1.DeviceClass) {
			c.Spec.Config = []resourcev1.DeviceClassConfiguration{{}}
		}, []want{{"FieldValueRequired spec.config[0].opaque", ""}}},
		{"33 configs", func(c *resourcev1.DeviceClass) {
			c.Spec.Config = make([]resourcev1.DeviceClassConfiguration, 33)
		}, []want{{"FieldValueTooMany spec.config", "at most 32"}}},
		{"extended resource name", func(c *resourcev1.DeviceClass) { c.Spec.ExtendedResourceName = ptr.To("gpu") }, []want{
			{"FieldValueInvalid spec.extendedResourceName", "must be a domain-prefixed path"},
		}},
		{"kubernetes.io extended resource", func(c *resourcev1.DeviceClass) { c.Spec.ExtendedResourceName = ptr.To("kubernetes.io/gpu") }, []want{
			{"FieldValueInvalid spec.extendedResourceName", `must not have "kubernetes.io/" domain`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := class()
			tt.modify(c)
			registrytest.ExpectWant(t, registrytest.Create(Resource(), c), tt.want...)
		})
	}
}

func TestGeneration(t *testing.T) {
	r := Resource()
	c := class()
	c.Generation = 7
	registrytest.ExpectWant(t, registrytest.Create(r, c))
	if c.Generation != 1 {
		t.Errorf("generation after create = %d, want 1", c.Generation)
	}
	labelled := c.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	registrytest.ExpectWant(t, registrytest.Update(r, labelled, c))
	if labelled.Generation != 1 {
		t.Errorf("generation after a label = %d, want 1", labelled.Generation)
	}
	changed := c.DeepCopy()
	changed.Spec.Selectors[0].CEL.Expression = "1 == 0"
	registrytest.ExpectWant(t, registrytest.Update(r, changed, c))
	if changed.Generation != 2 {
		t.Errorf("generation after a spec change = %d, want 2", changed.Generation)
	}
}

func TestUpdate(t *testing.T) {
	// A stored selector (or configuration) is not checked again; a changed
	// one is.
	old := class()
	old.Spec.Selectors[0].CEL.Expression = "no such thing"
	old.Spec.Config = []resourcev1.DeviceClassConfiguration{{}}
	c := old.DeepCopy()
	c.Labels = map[string]string{"a": "b"}
	registrytest.ExpectWant(t, registrytest.Update(Resource(), c, old), want{"FieldValueRequired spec.config[0].opaque", ""})
	c.Spec.Selectors = append(c.Spec.Selectors, c.Spec.Selectors[0])
	registrytest.ExpectWant(t, registrytest.Update(Resource(), c, old),
		want{"FieldValueInvalid spec.selectors[0].cel.expression", "Syntax error"},
		want{"FieldValueInvalid spec.selectors[1].cel.expression", "Syntax error"},
		want{"FieldValueRequired spec.config[0].opaque", ""})
}

func TestRow(t *testing.T) {
	r := Resource()
	created := metav1.NewTime(time.Date(2025, 5, 3, 16, 0, 0, 0, time.UTC))
	c := class()
	c.CreationTimestamp = created
	row := r.Row(c, created.Add(90*time.Second))
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"test-dra-1234", "90s"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
}
