// Package deployment is the Deployment controller of orch's controller
// manager. It rolls a Deployment's pod template out through ReplicaSets
// (whose pods the replicaset controller manages), the way
// kube-controller-manager does, so that kubectl rollout status, history,
// undo, restart, pause and resume behave as upstream.
//
// For each Deployment the loop
//
//   - claims ReplicaSets by selector and ownerReferences (adopts orphans,
//     releases those no longer selected);
//   - finds the new ReplicaSet, the one whose template equals the
//     Deployment's apart from the pod-template-hash label, or creates it
//     as "<deployment>-<hash>", the hash being upstream's FNV-32a of a
//     deep print of the template (plus status.collisionCount);
//   - numbers revisions: the new ReplicaSet gets
//     deployment.kubernetes.io/revision = highest old revision + 1 (with
//     revision-history when an old one is reused), the Deployment gets the
//     same annotation, and each ReplicaSet records desired-replicas and
//     max-replicas;
//   - scales: RollingUpdate within maxSurge and maxUnavailable (numbers or
//     percents; surge rounds up, unavailable rounds down, both zero means
//     one unavailable), Recreate (all old pods gone before the new
//     ReplicaSet is scaled up), proportional scaling when replicas change
//     mid-rollout or while paused;
//   - deletes old ReplicaSets beyond revisionHistoryLimit once they are
//     scaled to zero;
//   - reports status and the Progressing condition (NewReplicaSetCreated,
//     FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
//     ProgressDeadlineExceeded, DeploymentPaused, DeploymentResumed) and
//     the Available condition (MinimumReplicasAvailable,
//     MinimumReplicasUnavailable), re-checking the progress deadline on the
//     injected clock;
//   - records ScalingReplicaSet events ("Scaled up replica set web-5d8f7c9b4
//     from 0 to 5") as "deployment-controller".
//
// kubectl rollout undo patches the Deployment's template from an old
// ReplicaSet on the client side; the controller then finds that ReplicaSet
// as the new one and gives it the next revision. The deprecated
// server-side rollback annotation (deprecated.deployment.rollback.to) is
// honoured too.
package deployment
