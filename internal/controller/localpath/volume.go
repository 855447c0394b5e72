package localpath

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"orch/internal/localpath"
)

// errUnfit is wrapped by the reasons a claim cannot get a local-path
// volume; they become ProvisioningFailed events.
var errUnfit = errors.New("cannot provision a local-path volume")

// VolumeName is the name of the volume made for claim: pvc-UID, as
// upstream's provisioners name theirs.
func VolumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

// newVolume is the PersistentVolume for claim of class on node: a local
// volume in a directory of its own below the class's path parameter or
// root, of the claim's size (a project quota on the node where its filesystem
// has them, else only recorded), with the node's
// affinity and the class's reclaim policy, pre-bound to the claim.
func newVolume(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node, root string) (*corev1.PersistentVolume, error) {
	unfit := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errUnfit, fmt.Sprintf(format, args...))
	}
	if class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil, unfit("StorageClass %q must have volumeBindingMode WaitForFirstConsumer, so that the volume is made on its pod's node", class.Name)
	}
	for key := range class.Parameters {
		if key != localpath.PathParameter {
			return nil, unfit("StorageClass %q has the parameter %q: the only one is %q", class.Name, key, localpath.PathParameter)
		}
	}
	if p, ok := class.Parameters[localpath.PathParameter]; ok {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return nil, unfit("StorageClass %q's parameter %s=%q is not an absolute, clean path", class.Name, localpath.PathParameter, p)
		}
		root = p
	}
	switch {
	case claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode != corev1.PersistentVolumeFilesystem:
		return nil, unfit("volumeMode %s is not supported (only Filesystem)", *claim.Spec.VolumeMode)
	case claim.Spec.Selector != nil:
		return nil, unfit("claim Selector is not supported")
	case claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil:
		return nil, unfit("volumes cannot be cloned or restored from a data source")
	}
	for _, m := range claim.Spec.AccessModes {
		if m != corev1.ReadWriteOnce && m != corev1.ReadWriteOncePod {
			return nil, unfit("access mode %s is not supported (only ReadWriteOnce and ReadWriteOncePod: the volume is on one node)", m)
		}
	}
	size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil, unfit("the claim requests no storage")
	}
	policy := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	hostname := node.Labels[corev1.LabelHostname]
	if hostname == "" {
		hostname = node.Name
	}
	name := VolumeName(claim)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{localpath.NodeLabel: node.Name},
			Annotations: map[string]string{volume.AnnDynamicallyProvisioned: localpath.Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   slices.Clone(claim.Spec.AccessModes),
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class.Name,
			MountOptions:                  slices.Clone(class.MountOptions),
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{
				Path: filepath.Join(root, localpath.DirName(name, claim.Namespace, claim.Name))}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}
	if len(pv.Spec.AccessModes) == 0 {
		pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	if policy == corev1.PersistentVolumeReclaimDelete {
		pv.Finalizers = []string{localpath.Finalizer}
	}
	return pv, nil
}
