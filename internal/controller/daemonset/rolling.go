package daemonset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"orch/internal/controller"
)

// rollingUpdate replaces old pods with pods of the current revision.
// Without surge it deletes old pods, as many as maxUnavailable allows, and
// lets manage create their replacements; with surge it creates new pods
// beside old ones, as many as maxSurge allows, and deletes each old pod
// once its replacement is available.
func (c *Controller) rollingUpdate(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, podsOn map[string][]*corev1.Pod, hash string) error {
	p := placementOf(ds)
	desired := 0
	perNode := make(map[string][]*corev1.Pod, len(podsOn))
	for name, pods := range podsOn {
		perNode[name] = pods
	}
	eligible := map[string]bool{}
	for _, node := range nodes {
		if p.on(node).shouldRun {
			desired++
			eligible[node.Name] = true
			if _, ok := perNode[node.Name]; !ok {
				perNode[node.Name] = nil // a node still waiting for its pod
			}
		}
	}
	surge, unavailable, err := rollingLimits(ds, desired)
	if err != nil {
		return fmt.Errorf("invalid rolling update of DaemonSet %s: %w", controller.Key(ds), err)
	}
	if surge == 0 {
		return c.syncNodes(ctx, ds, c.planUnavailableUpdate(ds, perNode, hash, unavailable), nil, hash)
	}
	remove, create := c.planSurgeUpdate(ds, perNode, eligible, desired, hash, surge)
	return c.syncNodes(ctx, ds, remove, create, hash)
}

// planUnavailableUpdate returns the old pods to delete now: those not
// available anyway, and available ones while fewer than maxUnavailable
// nodes are without an available pod.
func (c *Controller) planUnavailableUpdate(ds *appsv1.DaemonSet, perNode map[string][]*corev1.Pod, hash string, maxUnavailable int) []*corev1.Pod {
	now := c.clock.Now()
	unavailable := 0
	var replace, candidates []*corev1.Pod
	for _, pods := range perNode {
		newPod, oldPod, ok := splitByRevision(ds, pods, hash)
		switch {
		case !ok, newPod == nil && oldPod == nil, newPod != nil && oldPod != nil:
			// manage has work to do here first; count the node unavailable.
			unavailable++
		case newPod != nil:
			if !isAvailable(newPod, ds.Spec.MinReadySeconds, now) {
				unavailable++
			}
		case !isAvailable(oldPod, ds.Spec.MinReadySeconds, now):
			replace = append(replace, oldPod)
			unavailable++
		case unavailable < maxUnavailable:
			candidates = append(candidates, oldPod)
		}
	}
	room := min(max(maxUnavailable-unavailable, 0), len(candidates))
	return append(replace, candidates[:room]...)
}

// planSurgeUpdate returns the old pods to delete and the nodes to start a
// new pod on beside the old one.
func (c *Controller) planSurgeUpdate(ds *appsv1.DaemonSet, perNode map[string][]*corev1.Pod, eligible map[string]bool, desired int, hash string, maxSurge int) (remove []*corev1.Pod, create []string) {
	now := c.clock.Now()
	surging, available := 0, 0
	var candidates []string
	var ineligibleOld []*corev1.Pod // old pods on nodes that no longer want one
	for node, pods := range perNode {
		newPod, oldPod, ok := splitByRevision(ds, pods, hash)
		if !ok {
			surging++ // manage cleans up this node first
			continue
		}
		if current := oldPod; current != nil || newPod != nil {
			if current == nil {
				current = newPod
			}
			if isAvailable(current, ds.Spec.MinReadySeconds, now) {
				available++
			}
		}
		switch {
		case oldPod == nil:
			// Up to date, or waiting for manage to create its pod.
		case newPod == nil && !isAvailable(oldPod, ds.Spec.MinReadySeconds, now):
			if !eligible[node] {
				remove = append(remove, oldPod)
				continue
			}
			create = append(create, node) // replace at once: nothing is lost
		case newPod == nil:
			if !eligible[node] {
				ineligibleOld = append(ineligibleOld, oldPod)
				continue
			}
			if surging < maxSurge {
				candidates = append(candidates, node)
			}
		case !isAvailable(newPod, ds.Spec.MinReadySeconds, now):
			surging++
		default:
			remove = append(remove, oldPod) // its replacement is available
		}
	}
	// Available old pods on nodes that no longer want one go only while
	// more pods are available than needed.
	if extra := available - desired; extra > 0 {
		remove = append(remove, ineligibleOld[:min(extra, len(ineligibleOld))]...)
	}
	room := min(max(maxSurge-surging, 0), len(candidates))
	return remove, append(create, candidates[:room]...)
}

// splitByRevision returns a node's live pod of the current revision and
// its live pod of an older one; ok is false when there are more than one
// of either (manage prunes them first).
func splitByRevision(ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(pod, ds, hash) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
			continue
		}
		if oldPod != nil {
			return nil, nil, false
		}
		oldPod = pod
	}
	return newPod, oldPod, true
}
