package plugins

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/volume"

	fw "orch/internal/scheduler/framework"
)

// VolumeBinding checks the pod's PersistentVolumeClaims: bound ones must
// have their PersistentVolume reachable from the node (local and hostPath
// PVs carry node affinity); WaitForFirstConsumer ones must find an
// available PV on the node or a provisioner that may provision there.
// Unbound claims of other classes must be bound first.
type VolumeBinding struct{}

// Name of the plugin.
func (VolumeBinding) Name() string { return "VolumeBinding" }

// The reasons, as upstream's.
const (
	ErrBindConflict = "node(s) didn't find available persistent volumes to bind"
	ErrNodeConflict = "node(s) didn't match PersistentVolume's node affinity"
	ErrPVNotExist   = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	errImmediate    = "pod has unbound immediate PersistentVolumeClaims"
)

type volumeState struct {
	lister         fw.VolumeLister
	bound, delayed []*v1.PersistentVolumeClaim
}

func (s *volumeState) Clone() fw.StateData { return s }

// PreFilter sorts the pod's claims into bound and delayed ones.
func (p VolumeBinding) PreFilter(cs *fw.CycleState, pi *fw.PodInfo, snap *fw.Snapshot) *fw.Status {
	pod := pi.Pod
	s := &volumeState{lister: snap.Volumes}
	has := false
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var name string
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name = pod.Name + "-" + vol.Name
		default:
			continue
		}
		has = true
		var pvc *v1.PersistentVolumeClaim
		ok := false
		if s.lister != nil {
			pvc, ok = s.lister.PVC(pod.Namespace, name)
		}
		switch {
		case !ok && vol.Ephemeral != nil:
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name))
		case !ok:
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		case pvc.Status.Phase == v1.ClaimLost:
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", name, pvc.Spec.VolumeName))
		case pvc.DeletionTimestamp != nil:
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		case pvc.Spec.VolumeName != "":
			s.bound = append(s.bound, pvc)
			continue
		}
		class := volume.GetPersistentVolumeClaimClass(pvc)
		if class == "" {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, errImmediate)
		}
		sc, ok := s.lister.StorageClass(class)
		if !ok {
			return fw.NewStatus(fw.Error, fmt.Sprintf("storageclass.storage.k8s.io %q not found", class))
		}
		if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, errImmediate)
		}
		s.delayed = append(s.delayed, pvc)
	}
	if !has {
		return fw.NewStatus(fw.Skip)
	}
	cs.Write(p.Name(), s)
	return nil
}

// Filter checks the claims against the node.
func (p VolumeBinding) Filter(cs *fw.CycleState, _ *fw.PodInfo, n *fw.NodeInfo) *fw.Status {
	s, _ := cs.Read(p.Name()).(*volumeState)
	if s == nil {
		return nil
	}
	_, reasons, err := s.plan(n.Node)
	if err != nil {
		return fw.NewStatus(fw.Error, err.Error())
	}
	if len(reasons) > 0 {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, reasons...)
	}
	return nil
}

// VolumePlan is what binding the pod to a node asks of its claims:
// PersistentVolumes to bind to claims, and claims to provision there.
type VolumePlan struct {
	Bind      map[*v1.PersistentVolumeClaim]*v1.PersistentVolume
	Provision []*v1.PersistentVolumeClaim
}

// PlanVolumes returns the volume plan for pod on node (nil when the pod
// has no claim waiting for its first consumer).
func PlanVolumes(pod *v1.Pod, node *v1.Node, snap *fw.Snapshot) (*VolumePlan, error) {
	cs := fw.NewCycleState()
	var p VolumeBinding
	if st := p.PreFilter(cs, fw.NewPodInfo(pod), snap); !st.IsSuccess() {
		return nil, nil
	}
	s := cs.Read(p.Name()).(*volumeState)
	if len(s.delayed) == 0 {
		return nil, nil
	}
	plan, reasons, err := s.plan(node)
	if err == nil && len(reasons) > 0 {
		err = fmt.Errorf("volumes do not fit node %q: %v", node.Name, reasons)
	}
	return plan, err
}

func (s *volumeState) plan(node *v1.Node) (*VolumePlan, []string, error) {
	var reasons []string
	for _, pvc := range s.bound {
		pv, ok := s.lister.PV(pvc.Spec.VolumeName)
		if !ok {
			reasons = append(reasons, ErrPVNotExist)
			break
		}
		if volume.CheckNodeAffinity(pv, node.Labels) != nil {
			reasons = append(reasons, ErrNodeConflict)
			break
		}
	}
	plan := &VolumePlan{Bind: map[*v1.PersistentVolumeClaim]*v1.PersistentVolume{}}
	claims := append([]*v1.PersistentVolumeClaim(nil), s.delayed...)
	sort.SliceStable(claims, func(i, j int) bool {
		a, b := claims[i].Spec.Resources.Requests[v1.ResourceStorage], claims[j].Spec.Resources.Requests[v1.ResourceStorage]
		return a.Cmp(b) < 0
	})
	chosen := map[string]*v1.PersistentVolume{}
	satisfied := true
	for _, pvc := range claims {
		if sel, ok := pvc.Annotations[volume.AnnSelectedNode]; ok {
			if sel != node.Name {
				satisfied = false
				break
			}
			plan.Provision = append(plan.Provision, pvc)
			continue
		}
		var pvs []*v1.PersistentVolume
		class := volume.GetPersistentVolumeClaimClass(pvc)
		for _, pv := range s.lister.PVs() {
			if volume.GetPersistentVolumeClass(pv) == class {
				pvs = append(pvs, pv)
			}
		}
		pv, err := volume.FindMatchingVolume(pvc, pvs, node, chosen, true, true)
		if err != nil {
			return nil, nil, err
		}
		if pv != nil {
			chosen[pv.Name] = pv
			plan.Bind[pvc] = pv
			continue
		}
		sc, _ := s.lister.StorageClass(class)
		if sc == nil || sc.Provisioner == "" || sc.Provisioner == volume.NotSupportedProvisioner || !topologyAllows(sc.AllowedTopologies, node.Labels) {
			satisfied = false
			continue
		}
		plan.Provision = append(plan.Provision, pvc)
	}
	if !satisfied {
		reasons = append(reasons, ErrBindConflict)
	}
	return plan, reasons, nil
}

// topologyAllows tells whether node labels meet a StorageClass's
// allowedTopologies (terms ORed, expressions ANDed; none allows all).
func topologyAllows(terms []v1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		ok := true
		for _, e := range t.MatchLabelExpressions {
			found := false
			for _, v := range e.Values {
				if nodeLabels[e.Key] == v {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			return true
		}
	}
	return false
}
