// Package tolerations merges and checks pod tolerations as upstream's
// admission plugins do (RuntimeClass's scheduling tolerations,
// PodTolerationRestriction's namespace defaults and allow-lists): one
// toleration covers another when every taint the second tolerates, the
// first tolerates too.
package tolerations

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// Merge is first and then second without the tolerations another of them
// covers.
func Merge(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var out []corev1.Toleration
next:
	for i, t := range all {
		for _, kept := range out {
			if Covers(kept, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && Covers(later, t) {
				continue next
			}
		}
		out = append(out, t)
	}
	return out
}

// Allowed is true when every toleration is covered by one of allowed; an
// empty allow-list allows everything.
func Allowed(tolerations, allowed []corev1.Toleration) bool {
	if len(allowed) == 0 {
		return true
	}
next:
	for _, t := range tolerations {
		for _, a := range allowed {
			if Covers(a, t) {
				continue next
			}
		}
		return false
	}
	return true
}

// Covers is true when a tolerates every taint t does: the same key (or a
// keyless Exists), the same effect (or any), for NoExecute no longer a
// time, and the same value unless a is Exists.
func Covers(a, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(a, t) {
		return true
	}
	if t.Key != a.Key && (a.Key != "" || a.Operator != corev1.TolerationOpExists) {
		return false
	}
	if a.Effect != "" && t.Effect != a.Effect {
		return false
	}
	if a.Effect == corev1.TaintEffectNoExecute && a.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *a.TolerationSeconds) {
		return false
	}
	switch a.Operator {
	case corev1.TolerationOpEqual, "":
		return (t.Operator == corev1.TolerationOpEqual || t.Operator == "") && t.Value == a.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
