package csinodes

import (
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"orch/internal/apiserver/registry/registrytest"
)

func node(drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
}

func TestValidate(t *testing.T) {
	r := Resource()
	good := storagev1.CSINodeDriver{Name: "csi.example.com", NodeID: "n1", TopologyKeys: []string{"topology.example.com/zone"}}
	tests := []struct {
		name string
		n    *storagev1.CSINode
		want []string
	}{
		{"no drivers", node(), nil},
		{"valid", node(good), nil},
		{"duplicate", node(good, good), []string{"FieldValueDuplicate spec.drivers[1].name"}},
		{"missing node id", node(storagev1.CSINodeDriver{Name: "a.b"}), []string{"FieldValueRequired spec.drivers[0].nodeID"}},
		{"long node id", node(storagev1.CSINodeDriver{Name: "a.b", NodeID: strings.Repeat("x", 257)}), []string{"FieldValueInvalid spec.drivers[0].nodeID"}},
		{"bad name", node(storagev1.CSINodeDriver{Name: "a b", NodeID: "x"}), []string{"FieldValueInvalid spec.drivers[0].name"}},
		{"negative count", node(storagev1.CSINodeDriver{Name: "a.b", NodeID: "x", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](-1)}}), []string{"FieldValueInvalid spec.drivers[0].allocatable.count"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registrytest.ExpectErrors(t, registrytest.Validate(r, tt.n, nil), tt.want...)
		})
	}

	old := node(good)
	moved := good
	moved.NodeID = "n2"
	registrytest.ExpectErrors(t, registrytest.Validate(r, node(moved), old), "FieldValueInvalid spec.drivers")
	counted := good
	counted.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To[int32](10)}
	registrytest.ExpectErrors(t, registrytest.Validate(r, node(counted, storagev1.CSINodeDriver{Name: "b.c", NodeID: "n"}), old))
}

func TestRow(t *testing.T) {
	r := Resource()
	now := time.Now()
	n := node(storagev1.CSINodeDriver{Name: "a"}, storagev1.CSINodeDriver{Name: "b"})
	n.CreationTimestamp = metav1.NewTime(now.Add(-30 * time.Second))
	row := r.Row(n, now)
	registrytest.CheckTable(t, r, row)
	if row[0] != "node-1" || row[1] != int64(2) || row[2] != "30s" {
		t.Errorf("row = %#v", row)
	}
}
