package node

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseLabels parses --node-label values of the form key=value (the value
// may be empty) into a map; a later value for the same key wins.
func ParseLabels(values []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, v := range values {
		key, value, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--node-label %q is not of the form key=value (e.g. disk=ssd)", v)
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return nil, fmt.Errorf("--node-label %q: key %q is not a valid label key: %s", v, key, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return nil, fmt.Errorf("--node-label %q: value %q is not a valid label value: %s", v, value, strings.Join(msgs, "; "))
		}
		labels[key] = value
	}
	return labels, nil
}

// ParseTaints parses --node-taint values of the form key[=value]:Effect,
// Effect being NoSchedule, PreferNoSchedule or NoExecute (the syntax of
// upstream's --register-with-taints and kubectl taint).
func ParseTaints(values []string) ([]corev1.Taint, error) {
	var taints []corev1.Taint
	seen := map[string]bool{}
	for _, v := range values {
		kv, effect, ok := strings.Cut(v, ":")
		if !ok {
			return nil, fmt.Errorf("--node-taint %q is not of the form key=value:Effect (e.g. dedicated=gpu:NoSchedule)", v)
		}
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("--node-taint %q: effect %q is not one of NoSchedule, PreferNoSchedule, NoExecute", v, effect)
		}
		key, value, _ := strings.Cut(kv, "=")
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return nil, fmt.Errorf("--node-taint %q: key %q is not valid: %s", v, key, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return nil, fmt.Errorf("--node-taint %q: value %q is not valid: %s", v, value, strings.Join(msgs, "; "))
		}
		if id := key + ":" + effect; seen[id] {
			return nil, fmt.Errorf("--node-taint %q: a taint with key %q and effect %s is given twice", v, key, effect)
		} else {
			seen[id] = true
		}
		taints = append(taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	return taints, nil
}
