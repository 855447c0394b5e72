// Package history keeps the ControllerRevision history of a workload, as the
// StatefulSet and DaemonSet controllers of kube-controller-manager do: each
// distinct pod template a parent has had is stored as an apps/v1
// ControllerRevision named <parent>-<hash>, owned (controller reference) by
// the parent, and numbered by .revision so that `kubectl rollout history`
// and `kubectl rollout undo` can read it.
//
// The pure helpers (Hash, New, Equal, FindEqual, Sort) build and compare
// revisions. History reads revisions from an informer's lister and writes
// them through client-go:
//
//   - List returns the revisions parent controls, after adopting orphans
//     its selector matches and releasing those it no longer matches
//     (upstream's ClaimControllerRevisions);
//   - Create creates a revision; when the name is taken by a revision with
//     other data (a hash collision) it increments *collisionCount and tries
//     the next name, as upstream does;
//   - UpdateRevision renumbers a revision (a rollback reuses an old one);
//   - Delete removes one (revisionHistoryLimit).
//
// Differences from upstream's pkg/controller/history, on purpose:
//
//   - List takes no parent kind: the kind used for adoption comes from the
//     parent's TypeMeta when set, else from its Go type (*appsv1.StatefulSet,
//     *appsv1.DaemonSet). A parent of another type can List but not adopt.
//   - List takes no context: the adoption and release patches it sends are
//     bounded by patchTimeout.
//   - Before adopting, List checks the parent's deletionTimestamp as the
//     informer shows it; upstream re-reads the parent from the apiserver.
//   - Create also keeps the ControllerRevisionHashLabel (when the revision
//     has it) in step with the name it finally gets.
//   - Delete treats a revision already gone as deleted.
//   - Hash encodes Data.Object (when Raw is empty) as JSON rather than with
//     upstream's spew-based DeepHashObject; every caller in orch sets Raw,
//     which is hashed byte for byte like upstream (32-bit FNV-1, the
//     algorithm of Go's fnv.New32, that upstream uses).
//
// Usage:
//
//	h := history.NewHistory(client, informers.Apps().V1().ControllerRevisions().Lister())
//	revs, err := h.List(sts, selector)
//	rev, err := history.New(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), labels, data, next, sts.Status.CollisionCount)
//	rev, err = h.Create(ctx, sts, rev, &collisionCount)
package history
