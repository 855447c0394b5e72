package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// Health is what the controller concludes about a node.
type Health int

const (
	// Healthy: the kubelet reports Ready and heartbeats.
	Healthy Health = iota
	// NotReady: the kubelet heartbeats but reports Ready False.
	NotReady
	// Unreachable: no heartbeat within the grace period (Ready becomes Unknown).
	Unreachable
)

// assess decides a node's health from its Ready condition and Lease: the
// newest of the lease renewal and the condition's heartbeat must be within
// grace of now.
func assess(node *corev1.Node, lease *coordinationv1.Lease, now time.Time, grace time.Duration) Health {
	ready := readyCondition(node)
	last := node.CreationTimestamp.Time
	if ready != nil && ready.LastHeartbeatTime.After(last) {
		last = ready.LastHeartbeatTime.Time
	}
	if lease != nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(last) {
		last = lease.Spec.RenewTime.Time
	}
	if now.Sub(last) > grace {
		return Unreachable
	}
	if ready == nil || ready.Status == corev1.ConditionUnknown {
		// Heartbeats without a status yet: a node still registering.
		if ready == nil {
			return NotReady
		}
		return Unreachable
	}
	if ready.Status != corev1.ConditionTrue {
		return NotReady
	}
	return Healthy
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// AutonomousLabel marks a node that runs on its own while cut off from
// the servers (`orch agent --autonomous`): when it is unreachable it gets
// the NoSchedule taint but not the NoExecute one, so its pods are not
// evicted.
const AutonomousLabel = "orch.dev/autonomous"

// autonomous is true for a node with AutonomousLabel "true".
func autonomous(node *corev1.Node) bool { return node.Labels[AutonomousLabel] == "true" }

// wantedTaints are the lifecycle taints a node of this health carries:
// NoSchedule (condition taints) and NoExecute (eviction), which an
// autonomous node does not get for being unreachable.
func wantedTaints(h Health, autonomous bool) []corev1.Taint {
	switch h {
	case NotReady:
		return []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, {Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}
	case Unreachable:
		if autonomous {
			return []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}
		}
		return []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}, {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	}
	return nil
}

// conditionTaintKeys are the NoSchedule taints of the node conditions that
// are True (upstream's TaintNodesByCondition; Ready has its own, above).
var conditionTaintKeys = map[corev1.NodeConditionType]string{
	corev1.NodeMemoryPressure:     corev1.TaintNodeMemoryPressure,
	corev1.NodeDiskPressure:       corev1.TaintNodeDiskPressure,
	corev1.NodePIDPressure:        corev1.TaintNodePIDPressure,
	corev1.NodeNetworkUnavailable: corev1.TaintNodeNetworkUnavailable,
}

// conditionTaints are the NoSchedule taints of node's True conditions,
// in the order of its conditions.
func conditionTaints(node *corev1.Node) []corev1.Taint {
	var taints []corev1.Taint
	for _, c := range node.Status.Conditions {
		if key, ok := conditionTaintKeys[c.Type]; ok && c.Status == corev1.ConditionTrue {
			taints = append(taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	return taints
}

// isLifecycleTaint says whether the controller owns t: any not-ready or
// unreachable taint, and the NoSchedule taints of conditions.
func isLifecycleTaint(t corev1.Taint) bool {
	if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
		return true
	}
	if t.Effect != corev1.TaintEffectNoSchedule {
		return false
	}
	for _, key := range conditionTaintKeys {
		if t.Key == key {
			return true
		}
	}
	return false
}

// reconcileTaints returns the node's taints with the lifecycle ones replaced
// by wanted, keeping TimeAdded of those already there; allowNoExecute false
// leaves out new NoExecute taints (rate limit, full disruption).
func reconcileTaints(current []corev1.Taint, wanted []corev1.Taint, now time.Time, allowNoExecute bool) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	existing := map[string]corev1.Taint{}
	for _, t := range current {
		if isLifecycleTaint(t) {
			existing[t.Key+"/"+string(t.Effect)] = t
			continue
		}
		out = append(out, t)
	}
	changed := false
	for _, w := range wanted {
		if t, ok := existing[w.Key+"/"+string(w.Effect)]; ok {
			out = append(out, t)
			delete(existing, w.Key+"/"+string(w.Effect))
			continue
		}
		if w.Effect == corev1.TaintEffectNoExecute && !allowNoExecute {
			continue
		}
		if w.Effect == corev1.TaintEffectNoExecute {
			added := metav1Time(now)
			w.TimeAdded = &added
		}
		out = append(out, w)
		changed = true
	}
	if len(existing) > 0 {
		changed = true
	}
	return out, changed
}
