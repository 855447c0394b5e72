package quota

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// PodMatches is true when pod is in the quota's scopes and scope selector,
// as upstream's pod evaluator matches them: Terminating pods have an
// activeDeadlineSeconds, BestEffort ones request and limit nothing,
// PriorityClass selects by the pod's priority class name, and
// CrossNamespacePodAffinity pods have affinity terms that name other
// namespaces.
func PodMatches(pod *corev1.Pod, spec corev1.ResourceQuotaSpec) bool {
	for _, s := range spec.Scopes {
		if !podInScope(pod, s, corev1.ScopeSelectorOpExists, nil) {
			return false
		}
	}
	if spec.ScopeSelector != nil {
		for _, r := range spec.ScopeSelector.MatchExpressions {
			if !podInScope(pod, r.ScopeName, r.Operator, r.Values) {
				return false
			}
		}
	}
	return true
}

// podInScope applies one scope requirement to pod.
func podInScope(pod *corev1.Pod, scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values []string) bool {
	var in bool
	switch scope {
	case corev1.ResourceQuotaScopeTerminating:
		in = pod.Spec.ActiveDeadlineSeconds != nil
	case corev1.ResourceQuotaScopeNotTerminating:
		in = pod.Spec.ActiveDeadlineSeconds == nil
	case corev1.ResourceQuotaScopeBestEffort:
		in = isBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		in = !isBestEffort(pod)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		in = crossNamespaceAffinity(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		name := pod.Spec.PriorityClassName
		switch op {
		case corev1.ScopeSelectorOpIn:
			return slices.Contains(values, name)
		case corev1.ScopeSelectorOpNotIn:
			return !slices.Contains(values, name)
		case corev1.ScopeSelectorOpExists:
			return name != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return name == ""
		}
		return false
	default:
		return false
	}
	if op == corev1.ScopeSelectorOpDoesNotExist {
		return !in
	}
	return in
}

func isBestEffort(p *corev1.Pod) bool {
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			return false
		}
	}
	return true
}

// crossNamespaceAffinity is true when a pod (anti-)affinity term of pod
// names namespaces or selects them.
func crossNamespaceAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}
