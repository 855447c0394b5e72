// Package podautoscaler is the HorizontalPodAutoscaler controller
// (autoscaling/v2), as upstream's kube-controller-manager runs it
// (pkg/controller/podautoscaler), with upstream's defaults: every
// autoscaler is looked at every 15 s (SyncPeriod), a usage ratio within
// 10% of its target changes nothing (Tolerance, unless spec.behavior sets
// its own), scale-downs are stabilized over 5 minutes unless the behavior
// says otherwise, and a pod's CPU samples count only once it has been
// ready long enough (CPUInitializationPeriod, InitialReadinessDelay).
//
// Each sync reads the target's scale subresource (any kind that has one:
// Deployments, StatefulSets, ReplicaSets, ReplicationControllers, custom
// resources; found through discovery, read again when a kind is new),
// lists the target's pods through the shared pod informer by the scale's
// status.selector, computes the replica count every metric calls for
// (the highest wins), stabilizes and limits it (spec.behavior's windows and
// policies, or without a behavior the legacy rules: stabilized scale-down,
// scale-up to at most twice the replicas or 4), writes the new count to
// the scale subresource and the autoscaler's status (currentReplicas,
// desiredReplicas, lastScaleTime, currentMetrics, observedGeneration, and
// the conditions AbleToScale, ScalingActive and ScalingLimited with
// upstream's reasons and messages), and records upstream's events as
// "horizontal-pod-autoscaler". An autoscaler whose target is scaled to
// zero stands aside (ScalingDisabled); two autoscalers whose targets'
// pods overlap both stop (AmbiguousSelector).
//
// Metrics:
//
//   - Resource and ContainerResource (cpu, memory, …): Utilization (percent
//     of the pods' requests) or AverageValue, from the resource metrics API
//     metrics.k8s.io/v1beta1, which orch's apiserver serves itself (a
//     ResourceMetrics; tests give their own to NewWithMetrics). Pods
//     without a sample count as using their whole request when scaling
//     down and nothing when scaling up; pods not yet ready are left out of
//     CPU samples and count as using nothing when scaling up.
//   - Pods and Object (custom.metrics.k8s.io) and External
//     (external.metrics.k8s.io) are read with k8s.io/metrics' clients when
//     an APIService registers a metrics adapter for them. orch ships none:
//     without one the metric fails with ScalingActive False
//     (FailedGetPodsMetric, FailedGetObjectMetric, FailedGetExternalMetric)
//     and a Warning event saying that no such API is registered.
//
// What the controller remembers between syncs (recent recommendations and
// scale events, for stabilization and policies) lives in memory, as
// upstream's does. Time comes from the Context's clock.
//
// Not done: scaling to or from zero (orch's API keeps minReplicas at 1 or
// more, as upstream without HPAScaleToZero, so the ScaledToZero condition
// is never set), and upstream's controller metrics (monitor).
//
//	hpa, err := podautoscaler.New(ctx) // ctx.Config is required
//	if err != nil { … }
//	go hpa.Start(runCtx)
package podautoscaler
