// Package statefulset is the StatefulSet controller of orch's controller
// manager, with the semantics of kube-controller-manager 1.37.
//
// A StatefulSet web with replicas N runs pods web-<ordinal> for ordinals
// spec.ordinals.start … start+N-1. Each pod carries its identity: hostname
// = pod name, subdomain = spec.serviceName, labels
// statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
// controller-revision-hash (the name of the ControllerRevision it was made
// from), and a controller ownerReference to the set. For every
// volumeClaimTemplate t the pod gets a claim t-web-<ordinal>, created before
// the pod and mounted as volume t.
//
// For each set the loop
//
//   - waits until the informer caches show the controller's own last writes
//     (pods, claims, status), so a lagging cache never makes it act twice;
//   - claims ControllerRevisions (internal/controller/history) and pods:
//     orphans the selector matches (and, for pods, whose name is
//     <set>-<ordinal>) are adopted, those no longer matching released;
//   - finds the update revision (the one holding spec.template: the latest,
//     an older one renumbered on a rollback, or a new one) and the current
//     revision (status.currentRevision);
//   - replaces pods that failed or succeeded, creates missing pods (below
//     the partition at the current revision, the others at the update
//     revision), gives pods their identity and storage back, and deletes
//     pods whose ordinal is out of range. OrderedReady does this one pod at
//     a time, in ordinal order (deletions highest first), stopping at the
//     first pod that is not Running, Ready and available (minReadySeconds);
//     Parallel does it all at once, in slow-start batches;
//   - RollingUpdate: deletes pods of an old revision, highest ordinal first,
//     down to rollingUpdate.partition, keeping at most
//     rollingUpdate.maxUnavailable pods unavailable (default 1; on by default
//     since 1.37); the next rounds recreate them at the update revision.
//     OnDelete: pods are updated only when someone deletes them;
//   - writes status: replicas, readyReplicas, availableReplicas,
//     currentReplicas, updatedReplicas, currentRevision, updateRevision,
//     collisionCount, observedGeneration; once every replica runs the update
//     revision and is ready, it becomes the current revision;
//   - deletes the oldest revisions no pod uses beyond revisionHistoryLimit.
//
// persistentVolumeClaimRetentionPolicy is carried out with ownerReferences
// on the claims, for the garbage collector: whenDeleted=Delete makes the set
// own its pods' claims; whenScaled=Delete makes a pod whose ordinal was
// scaled away own its claims.
//
// Events are recorded as "statefulset-controller" with upstream's reasons
// and messages: SuccessfulCreate "Create Pod web-0 in StatefulSet web
// successful", "Create Claim data-web-0 Pod web-0 in StatefulSet web
// success", SuccessfulDelete, FailedCreate, FailedDelete, SuccessfulUpdate,
// FailedUpdate.
//
// Not done (upstream has them behind gates that are off by default in
// 1.37): the Recreate update strategy. Upstream's semantic comparison of
// revisions (a mitigation for revisions written by older releases) is not
// needed here: every revision is written by this code.
//
// Usage:
//
//	c := statefulset.New(cctx)        // registers informers and handlers
//	cctx.Informers.StartWithContext(ctx)  // the caller starts the factory
//	err := c.Start(ctx)               // blocks until ctx ends
package statefulset
