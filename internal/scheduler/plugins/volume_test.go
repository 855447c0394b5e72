package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fw "orch/internal/scheduler/framework"
	st "orch/internal/scheduler/schedtest"
)

type fakeVolumes struct {
	pvcs    map[string]*v1.PersistentVolumeClaim
	pvs     []*v1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func (f *fakeVolumes) PVC(ns, name string) (*v1.PersistentVolumeClaim, bool) {
	p, ok := f.pvcs[name]
	return p, ok
}
func (f *fakeVolumes) PV(name string) (*v1.PersistentVolume, bool) {
	for _, pv := range f.pvs {
		if pv.Name == name {
			return pv, true
		}
	}
	return nil, false
}
func (f *fakeVolumes) StorageClass(name string) (*storagev1.StorageClass, bool) {
	c, ok := f.classes[name]
	return c, ok
}
func (f *fakeVolumes) PVs() []*v1.PersistentVolume { return f.pvs }

func claim(name, class, volume string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("claim-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// localPV is a 10Gi local volume on node.
func localPV(name, class, node string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{StorageClassName: class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("10Gi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/data"}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable}}
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func TestVolumeBinding(t *testing.T) {
	nodes := []*v1.Node{st.Node("n1").Obj(), st.Node("n2").Obj()}
	vols := &fakeVolumes{
		pvcs: map[string]*v1.PersistentVolumeClaim{
			"bound":     claim("bound", "local", "pv-n1"),
			"lost":      claim("lost", "local", "pv-gone"),
			"immediate": claim("immediate", "fast", ""),
			"wait":      claim("wait", "local", ""),
			"dynamic":   claim("dynamic", "local-path", ""),
		},
		pvs: []*v1.PersistentVolume{localPV("pv-n1", "local", "n1"), localPV("pv-n2", "local", "n2")},
		classes: map[string]*storagev1.StorageClass{
			"local":      class("local", "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer),
			"fast":       class("fast", "example.com/fast", storagev1.VolumeBindingImmediate),
			"local-path": class("local-path", "rancher.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer),
		},
	}
	// pv-n1 is taken by "bound": the WaitForFirstConsumer claim can only use pv-n2.
	vols.pvs[0].Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "bound", UID: vols.pvcs["bound"].UID}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]string
	}{
		{"no claims", st.Pod("p").Obj(), map[string]string{"n1": "ok", "n2": "ok"}},
		{"missing claim", st.Pod("p").PVC("nope").Obj(), map[string]string{
			"n1": `unresolvable: persistentvolumeclaim "nope" not found`, "n2": `unresolvable: persistentvolumeclaim "nope" not found`}},
		{"bound local volume", st.Pod("p").PVC("bound").Obj(), map[string]string{"n1": "ok", "n2": "unresolvable: " + ErrNodeConflict}},
		{"bound to a missing volume", st.Pod("p").PVC("lost").Obj(), map[string]string{"n1": "unresolvable: " + ErrPVNotExist, "n2": "unresolvable: " + ErrPVNotExist}},
		{"unbound immediate claim", st.Pod("p").PVC("immediate").Obj(), map[string]string{"n1": "unresolvable: " + errImmediate, "n2": "unresolvable: " + errImmediate}},
		{"wait for first consumer, static", st.Pod("p").PVC("wait").Obj(), map[string]string{"n1": "unresolvable: " + ErrBindConflict, "n2": "ok"}},
		{"wait for first consumer, provisioned", st.Pod("p").PVC("dynamic").Obj(), map[string]string{"n1": "ok", "n2": "ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := fw.NewSnapshot(nodes, nil)
			snap.Volumes = vols
			statuses, _ := only(VolumeBinding{}).Evaluate(tc.pod, snap)
			check(t, verdicts(statuses, nodes), tc.want)
		})
	}

	snap := fw.NewSnapshot(nodes, nil)
	snap.Volumes = vols
	plan, err := PlanVolumes(st.Pod("p").PVC("wait").PVC("dynamic").Obj(), nodes[1], snap)
	if err != nil || len(plan.Bind) != 1 || len(plan.Provision) != 1 || plan.Provision[0].Name != "dynamic" {
		t.Fatalf("plan = %+v, %v", plan, err)
	}
	for pvc, pv := range plan.Bind {
		if pvc.Name != "wait" || pv.Name != "pv-n2" {
			t.Errorf("plan binds %s to %s, want wait to pv-n2", pvc.Name, pv.Name)
		}
	}
}

func TestVolumeRestrictions(t *testing.T) {
	nodes := []*v1.Node{st.Node("n1").Obj(), st.Node("n2").Obj()}
	once := claim("once", "local-path", "pv-1")
	once.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
	vols := &fakeVolumes{pvcs: map[string]*v1.PersistentVolumeClaim{"once": once, "shared": claim("shared", "local-path", "pv-2")}}
	for _, tc := range []struct {
		name    string
		running []*v1.Pod
		pod     *v1.Pod
		want    string
	}{
		{"ReadWriteOncePod claim unused", nil, st.Pod("p").PVC("once").Obj(), "ok"},
		{"ReadWriteOncePod claim in use", []*v1.Pod{st.Pod("q").PVC("once").Node("n2").Obj()}, st.Pod("p").PVC("once").Obj(), "unresolvable: " + ErrReadWriteOncePodConflict},
		{"ReadWriteOnce claim in use", []*v1.Pod{st.Pod("q").PVC("shared").Node("n2").Obj()}, st.Pod("p").PVC("shared").Obj(), "ok"},
		{"the same claim name in another namespace", []*v1.Pod{st.Pod("q").Namespace("other").PVC("once").Node("n2").Obj()}, st.Pod("p").PVC("once").Obj(), "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := fw.NewSnapshot(nodes, tc.running)
			snap.Volumes = vols
			statuses, _ := only(VolumeRestrictions{}).Evaluate(tc.pod, snap)
			check(t, verdicts(statuses, nodes), map[string]string{"n1": tc.want, "n2": tc.want})
		})
	}
}
