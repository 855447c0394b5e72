// Package daemonset is the DaemonSet controller of orch's controller
// manager, with the behaviour of kube-controller-manager's: one pod of each
// DaemonSet on every node that qualifies.
//
// A node qualifies when it matches the pod template's nodeName (if set),
// nodeSelector and required node affinity, and has no NoSchedule or
// NoExecute taint the pods do not tolerate (PreferNoSchedule is ignored).
// Daemon pods get upstream's automatic tolerations: not-ready and
// unreachable (NoExecute, forever), disk-, memory- and pid-pressure and
// unschedulable (NoSchedule), and network-unavailable for hostNetwork pods;
// so a cordoned or unhealthy node still runs its daemons. A pod already
// running stays on a node that gained a NoSchedule taint as long as it
// tolerates the node's NoExecute taints.
//
// For each DaemonSet the loop
//
//   - records the pod template as ControllerRevisions (package history): the
//     current one is labelled controller-revision-hash=<hash>, an old one
//     that comes back (kubectl rollout undo) is renumbered as the newest,
//     and old ones beyond revisionHistoryLimit that no pod runs are deleted;
//   - claims pods: adopts the orphans its selector matches, releases its
//     pods that no longer match;
//   - creates the missing pods, without binding them: each is pinned by a
//     required node affinity on metadata.name (replacing the template's
//     required terms, which were already checked) and the default
//     scheduler binds it. Pods carry the controller ownerReference and the
//     labels controller-revision-hash and pod-template-generation;
//   - deletes pods on nodes that no longer qualify, surplus pods on a node,
//     succeeded pods, failed pods (with a per-node backoff, 1 s doubling to
//     15 min, so it does not fight a kubelet that rejects them), and
//     unbound pods meant for nodes that were deleted (bound pods of deleted
//     nodes are the pod garbage collector's);
//   - updates pods: OnDelete waits for the user to delete them;
//     RollingUpdate replaces old pods as maxUnavailable allows (deleting
//     first) or as maxSurge allows (starting the new pod beside the old one
//     and deleting the old one once the new one is available);
//   - writes status: desiredNumberScheduled, currentNumberScheduled,
//     numberMisscheduled, numberReady, updatedNumberScheduled,
//     numberAvailable (ready for minReadySeconds, re-checked on the injected
//     clock), numberUnavailable, observedGeneration and collisionCount.
//
// It records SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete,
// FailedDaemonPod, SucceededDaemonPod and SelectingAll events as
// "daemonset-controller". `kubectl rollout status|history|undo ds/NAME`
// work on what it writes.
//
// Usage:
//
//	c := daemonset.New(cctx)          // registers informers
//	cctx.Informers.StartWithContext(ctx)  // the caller starts the factory
//	err := c.Start(ctx)               // blocks until ctx ends
package daemonset
