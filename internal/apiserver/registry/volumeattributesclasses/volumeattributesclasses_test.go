package volumeattributesclasses

import (
	"reflect"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch/internal/apiserver/registry/registrytest"
)

// class is a class as the conformance test creates it.
func class(driver string, params map[string]string) *storagev1.VolumeAttributesClass {
	return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-x7k2p"}, DriverName: driver, Parameters: params}
}

func TestResource(t *testing.T) {
	r := Resource()
	if r.GroupVersion.String() != "storage.k8s.io/v1" || r.Resource != "volumeattributesclasses" || r.Kind != "VolumeAttributesClass" ||
		r.SingularName != "volumeattributesclass" || r.Namespaced || r.HasStatus || !reflect.DeepEqual(r.ShortNames, []string{"vac"}) {
		t.Errorf("names: %+v", r)
	}
	if _, ok := r.NewList().(*storagev1.VolumeAttributesClassList); !ok {
		t.Errorf("NewList() = %T", r.NewList())
	}
}

func TestValidate(t *testing.T) {
	foo := map[string]string{"foo": "bar"}
	tooMany := map[string]string{}
	for i := 0; i <= 512; i++ {
		tooMany[strings.Repeat("k", i+1)] = ""
	}
	tests := []struct {
		name string
		c    *storagev1.VolumeAttributesClass
		want []string
	}{
		{"conformance", class("e2e-fake-csi-driver", foo), nil},
		{"upper case driver", class("Example.COM/Driver", foo), nil},
		{"no driver", class("", foo), []string{"FieldValueRequired driverName"}},
		{"bad driver", class("a b", foo), []string{"FieldValueInvalid driverName"}},
		{"no parameters", class("csi.example.com", nil), []string{"FieldValueRequired parameters"}},
		{"empty key", class("csi.example.com", map[string]string{"": "x"}), []string{"FieldValueInvalid parameters"}},
		{"too many parameters", class("csi.example.com", tooMany), []string{"FieldValueTooLong parameters"}},
		{"too large parameters", class("csi.example.com", map[string]string{"iops": strings.Repeat("9", 256<<10)}), []string{"FieldValueTooLong parameters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Create(Resource(), tt.c), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := class("e2e-fake-csi-driver", map[string]string{"foo": "bar"})
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"e2e-x7k2p": "updated"}
	tests := []struct {
		name string
		c    *storagev1.VolumeAttributesClass
		want []string
	}{
		{"labels", labelled, nil},
		{"driver", class("other-driver", map[string]string{"foo": "bar"}), []string{"FieldValueForbidden driverName"}},
		{"parameters", class("e2e-fake-csi-driver", map[string]string{"foo": "baz"}), []string{"FieldValueForbidden parameters"}},
		{"parameters dropped", class("e2e-fake-csi-driver", nil), []string{"FieldValueRequired parameters", "FieldValueForbidden parameters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Update(Resource(), tt.c, old), tt.want...)
		})
	}
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := class("e2e-fake-csi-driver", map[string]string{"foo": "bar"})
	c.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	row := r.Row(c, now)
	registrytest.CheckTable(t, r, row)
	if want := []interface{}{"e2e-x7k2p", "e2e-fake-csi-driver", "90s"}; !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
}
