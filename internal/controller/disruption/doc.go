// Package disruption is the PodDisruptionBudget controller, as upstream's
// kube-controller-manager runs it (pkg/controller/disruption).
//
// For each budget it lists the pods its selector picks (an empty selector
// picks every pod of the namespace, a missing one none, as in policy/v1),
// works out how many pods are expected (the replicas of the pods' owning
// Deployment, ReplicaSet, ReplicationController or StatefulSet, needed for
// maxUnavailable and for a percentage minAvailable; the pod count for an
// integer minAvailable) and how many must stay healthy, counts the ready
// pods that are neither being deleted nor recently evicted, and writes
// status: currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed,
// observedGeneration and the DisruptionAllowed condition (SufficientPods,
// InsufficientPods, or SyncFailed with disruptionsAllowed 0 when the status
// could not be computed).
//
// The apiserver's pods/eviction records each pod it lets go in
// status.disruptedPods; an entry whose pod has not started terminating
// within two minutes is dropped (a re-check is queued on the injected clock
// for when the oldest entry expires). Pods carrying a DisruptionTarget=True
// condition for more than two minutes without being deleted get the
// condition reset to False, as upstream does.
//
// Events are recorded as upstream's component "controllermanager": NoPods,
// CalculateExpectedPodCountFailed, UnmanagedPods on the budget;
// NotDeleted and MultiplePodDisruptionBudgets on pods.
//
// Controllers that only expose a scale subresource (custom resources) are
// not looked up: orch serves no custom resources, so a pod owned by anything
// else than the four workload kinds makes the sync fail with "found no
// controllers for pod", as upstream does when no finder matches.
package disruption
