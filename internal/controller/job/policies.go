package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// policyMatch is what a job's podFailurePolicy says about one failed pod:
// the action of the first rule it matches ("" when none does) and, for
// FailJob, the message of the job's failure condition.
type policyMatch struct {
	action  batchv1.PodFailurePolicyAction
	message string
}

// counts reports whether the failure counts towards backoffLimit (and
// backoffLimitPerIndex): all but those an Ignore rule matched.
func (m policyMatch) counts() bool { return m.action != batchv1.PodFailurePolicyActionIgnore }

// matchFailurePolicy applies the rules in order to a failed pod.
func matchFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) policyMatch {
	if policy == nil {
		return policyMatch{}
	}
	for i, rule := range policy.Rules {
		var msg string
		switch {
		case rule.OnExitCodes != nil:
			s := matchExitCodes(pod, rule.OnExitCodes)
			if s == nil {
				continue
			}
			msg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
				s.Name, pod.Namespace, pod.Name, s.State.Terminated.ExitCode, rule.Action, i)
		case len(rule.OnPodConditions) > 0:
			c := matchPodConditions(pod, rule.OnPodConditions)
			if c == nil {
				continue
			}
			msg = fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d", pod.Namespace, pod.Name, c.Type, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionFailJob:
			return policyMatch{action: rule.Action, message: msg}
		case batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
			return policyMatch{action: rule.Action}
		}
	}
	return policyMatch{}
}

// matchExitCodes returns the first terminated container (then init
// container) whose non-zero exit code satisfies req.
func matchExitCodes(pod *corev1.Pod, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			s := &list[i]
			t := s.State.Terminated
			if t == nil || t.ExitCode == 0 || (req.ContainerName != nil && *req.ContainerName != s.Name) {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) ||
				(req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return s
			}
		}
	}
	return nil
}

// matchPodConditions returns the first pod condition one of the patterns
// matches.
func matchPodConditions(pod *corev1.Pod, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		for _, p := range patterns {
			if c.Type == p.Type && c.Status == p.Status {
				return c
			}
		}
	}
	return nil
}

// matchSuccessPolicy reports whether an Indexed job's succeeded indexes
// satisfy one of its successPolicy rules, and the condition message.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int32, succeeded intervals) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		if rule.SucceededIndexes != nil {
			required := parseIntervals(*rule.SucceededIndexes, int(completions))
			if len(required) == 0 {
				continue
			}
			done := overlap(required, succeeded)
			if done == required.total() || (rule.SucceededCount != nil && done >= int(*rule.SucceededCount)) {
				return fmt.Sprintf("Matched rules at index %d", i), true
			}
			continue
		}
		if rule.SucceededCount != nil && succeeded.total() >= int(*rule.SucceededCount) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

// overlap is how many indexes two sets have in common.
func overlap(a, b intervals) int {
	n := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		if o := min(a[i].last, b[j].last) - max(a[i].first, b[j].first) + 1; o > 0 {
			n += o
		}
		if a[i].last < b[j].last {
			i++
		} else {
			j++
		}
	}
	return n
}
