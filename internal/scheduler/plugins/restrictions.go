package plugins

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	fw "orch/internal/scheduler/framework"
	"orch/internal/volumeprotection"
)

// VolumeRestrictions refuses a pod one of whose claims is ReadWriteOncePod
// while another pod already uses that claim, as upstream's plugin of that
// name (its other rules are for cloud disks, which orch does not attach).
// Unlike upstream's, the refusal is unresolvable: no pod is preempted to
// free the claim.
type VolumeRestrictions struct{}

// Name of the plugin.
func (VolumeRestrictions) Name() string { return "VolumeRestrictions" }

// ErrReadWriteOncePodConflict is upstream's reason.
const ErrReadWriteOncePodConflict = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"

// PreFilter looks for another pod, on any node, using one of the pod's
// ReadWriteOncePod claims.
func (VolumeRestrictions) PreFilter(_ *fw.CycleState, pi *fw.PodInfo, snap *fw.Snapshot) *fw.Status {
	pod := pi.Pod
	if snap.Volumes == nil {
		return fw.NewStatus(fw.Skip)
	}
	once := map[string]bool{}
	for _, name := range volumeprotection.ClaimNames(pod) {
		if pvc, ok := snap.Volumes.PVC(pod.Namespace, name); ok && slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteOncePod) {
			once[name] = true
		}
	}
	if len(once) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	for _, n := range snap.Nodes() {
		for _, other := range n.Pods {
			if other.Pod.UID == pod.UID || other.Pod.Namespace != pod.Namespace {
				continue
			}
			for _, name := range volumeprotection.ClaimNames(other.Pod) {
				if once[name] {
					return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReadWriteOncePodConflict)
				}
			}
		}
	}
	return fw.NewStatus(fw.Skip)
}
