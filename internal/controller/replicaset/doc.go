// Package replicaset is the ReplicaSet controller of orch's controller
// manager. It also runs ReplicationControllers, with the same logic: a
// ReplicationController is read as if it were a ReplicaSet whose selector
// has only matchLabels, and written back as a ReplicationController, as
// kube-controller-manager does.
//
// For each ReplicaSet the loop
//
//   - claims pods: adopts orphans its selector matches (a controller
//     ownerReference is patched in) and releases the pods it controls that
//     no longer match (the reference is patched out);
//   - creates pods from spec.template when too few are alive, in slow-start
//     batches of 1, 2, 4, … so that a failing create (a quota, an admission
//     denial) is tried once rather than a thousand times;
//   - deletes surplus pods, those that are least far along first
//     (unscheduled, then pending, then not ready, then by
//     controller.kubernetes.io/pod-deletion-cost, doubled-up on a node, most
//     recently ready, most restarted, newest);
//   - records how many creates and deletes it is waiting to see, so that the
//     lag of the pod informer never makes it act twice (expectations);
//   - writes status: replicas, fullyLabeledReplicas, readyReplicas,
//     availableReplicas (ready for minReadySeconds), terminatingReplicas
//     (ReplicaSets only), observedGeneration and the ReplicaFailure condition.
//
// It records SuccessfulCreate, SuccessfulDelete, FailedCreate and
// FailedDelete events as "replicaset-controller" or
// "replication-controller".
//
// Usage:
//
//	c := replicaset.New(cctx)         // registers informers
//	cctx.Informers.StartWithContext(ctx)  // the caller starts the factory
//	err := c.Start(ctx)               // blocks until ctx ends
package replicaset
