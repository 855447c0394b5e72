package daemonset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// placement is what decides, for one DaemonSet, which nodes get a pod: the
// template's node name, its required node affinity (nodeSelector and
// requiredDuringScheduling terms) and the tolerations its pods will have
// (the template's plus the automatic ones). It is built once per sync and
// asked about every node.
type placement struct {
	nodeName    string
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []corev1.Toleration
}

func placementOf(ds *appsv1.DaemonSet) placement {
	spec := ds.Spec.Template.Spec.DeepCopy()
	addDaemonTolerations(spec)
	return placement{
		nodeName:    spec.NodeName,
		affinity:    nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity),
		tolerations: spec.Tolerations,
	}
}

// eligibility is the verdict about one node.
type eligibility struct {
	// shouldRun: a daemon pod belongs on the node.
	shouldRun bool
	// mayContinue: a daemon pod already there may stay (it tolerates every
	// NoExecute taint, even if a NoSchedule taint keeps new ones away).
	mayContinue bool
}

// on judges node. A node that is unschedulable or not ready is still
// eligible: daemon pods tolerate those taints automatically, as upstream.
// PreferNoSchedule taints are ignored.
func (p placement) on(node *corev1.Node) eligibility {
	if p.nodeName != "" && p.nodeName != node.Name {
		return eligibility{}
	}
	if fits, _ := p.affinity.Match(node); !fits {
		return eligibility{}
	}
	if p.untolerated(node, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute) {
		return eligibility{mayContinue: !p.untolerated(node, corev1.TaintEffectNoExecute)}
	}
	return eligibility{shouldRun: true, mayContinue: true}
}

// untolerated reports whether node has a taint with one of effects that
// the pods do not tolerate.
func (p placement) untolerated(node *corev1.Node, effects ...corev1.TaintEffect) bool {
	_, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, p.tolerations, func(t *corev1.Taint) bool {
		for _, e := range effects {
			if t.Effect == e {
				return true
			}
		}
		return false
	}, false)
	return found
}

// daemonTolerations are added to every daemon pod so that node problems
// neither evict it nor keep it off its node.
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	t := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if hostNetwork {
		t = append(t, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return t
}

// addDaemonTolerations adds the automatic tolerations to spec; one the
// template already has (same key, operator, value and effect) is replaced
// rather than repeated.
func addDaemonTolerations(spec *corev1.PodSpec) {
	for _, add := range daemonTolerations(spec.HostNetwork) {
		replaced := false
		for i, have := range spec.Tolerations {
			if have.MatchToleration(&add) {
				spec.Tolerations[i] = add
				replaced = true
				break
			}
		}
		if !replaced {
			spec.Tolerations = append(spec.Tolerations, add)
		}
	}
}

// pinToNode makes the required node affinity select exactly node (by
// metadata.name), so that the default scheduler binds the pod there. The
// required terms are replaced, not extended: the controller has already
// checked the template's own terms against the node.
func pinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	terms := []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
	}}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	if affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
	return affinity
}

// targetNode is the node a daemon pod is for: where it is bound, or,
// before binding, the node its metadata.name affinity names.
func targetNode(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", fmt.Errorf("pod %s/%s has no required node affinity", pod.Namespace, pod.Name)
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key != metav1.ObjectNameField || req.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			if len(req.Values) != 1 {
				return "", fmt.Errorf("pod %s/%s: its %s affinity names %d nodes, want 1", pod.Namespace, pod.Name, metav1.ObjectNameField, len(req.Values))
			}
			return req.Values[0], nil
		}
	}
	return "", fmt.Errorf("pod %s/%s names no node in its affinity", pod.Namespace, pod.Name)
}
