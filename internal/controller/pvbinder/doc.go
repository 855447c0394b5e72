// Package pvbinder is the PersistentVolume binder: the binding half of
// upstream's persistentvolume controller (pkg/controller/volume/
// persistentvolume), without volume plugins.
//
// An unbound claim is bound to a PersistentVolume pre-bound to it (its
// spec.claimRef names the claim) or, failing that, to the available volume
// that fits it best: same storage class and volumeAttributesClass, the
// claim's selector matches its labels, its volumeMode is the claim's, it
// offers every access mode the claim asks for (fewest extra modes first)
// and at least the requested storage (smallest first). A claim that names a
// volume in spec.volumeName gets that one if it fits. Binding sets the
// volume's spec.claimRef, the claim's spec.volumeName, the
// pv.kubernetes.io/bind-completed and pv.kubernetes.io/bound-by-controller
// annotations, the phases (volume Bound, claim Bound with the volume's
// capacity and access modes in status). Volumes are Available while free
// or only pre-bound; claims are Pending until bound and Lost when their
// volume goes away. A claim without a class gets the default StorageClass
// (storageclass.kubernetes.io/is-default-class) retroactively.
//
// Claims of a WaitForFirstConsumer StorageClass are not bound here to free
// volumes: they stay Pending (event WaitForFirstConsumer, or
// WaitForPodScheduled while a pod using them waits) until the scheduler
// picks a node. orch's scheduler (internal/scheduler, VolumeBinding) then
// either pre-binds a fitting volume on that node by setting its claimRef,
// which this binder completes, or, when no volume fits and the class has a
// provisioner, writes volume.kubernetes.io/selected-node on the claim. That
// and any claim of an Immediate class with no fitting volume are left to an
// external provisioner: the claim gets the volume.kubernetes.io/
// storage-provisioner annotations and an ExternalProvisioning event.
// Nothing is provisioned here; a class without a provisioner gives a
// ProvisioningFailed event, a claim without a class a FailedBinding event.
//
// When a bound claim is deleted its volume becomes Released and its
// reclaimPolicy runs: Retain keeps it Released; Delete deletes the
// PersistentVolume object only (orch has no volume plugins, so no backing
// storage is deleted; volumes an external provisioner created are left to
// that provisioner); Recycle is not supported (the volume becomes Failed).
//
// Events are recorded as upstream's "persistentvolume-controller".
package pvbinder
