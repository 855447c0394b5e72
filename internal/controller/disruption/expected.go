package disruption

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// scale is a controller's identity and desired replica count.
type scale struct {
	uid      types.UID
	replicas int32
}

// scaleFinder returns the scale of the controller ref points at in
// namespace, or nil when ref names no controller it knows.
type scaleFinder func(ref *metav1.OwnerReference, namespace string) (*scale, error)

// counts is what a budget's status is computed from.
type counts struct {
	expected  int32
	desired   int32
	unmanaged []string
}

// expectedCounts works out expectedPods and desiredHealthy for spec over
// pods: an integer minAvailable needs no controller (expected is the pod
// count); maxUnavailable and a percentage minAvailable are scaled against
// the sum of the replicas of the pods' controllers, rounding up.
func expectedCounts(spec policyv1.PodDisruptionBudgetSpec, pods []*corev1.Pod, find scaleFinder) (counts, error) {
	var c counts
	var err error
	switch {
	case spec.MaxUnavailable != nil:
		if c.expected, c.unmanaged, err = expectedScale(pods, find); err != nil {
			return c, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(c.expected), true)
		if err != nil {
			return c, err
		}
		c.desired = max(c.expected-int32(maxUnavailable), 0)
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		c.desired, c.expected = spec.MinAvailable.IntVal, int32(len(pods))
	case spec.MinAvailable != nil:
		if c.expected, c.unmanaged, err = expectedScale(pods, find); err != nil {
			return c, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(c.expected), true)
		if err != nil {
			return c, err
		}
		c.desired = int32(minAvailable)
	}
	return c, nil
}

// expectedScale sums the replicas of the distinct controllers of pods.
// Pods without a controller are returned by name and not counted; a pod
// whose controller cannot be found is an error.
func expectedScale(pods []*corev1.Pod, find scaleFinder) (int32, []string, error) {
	byUID := map[types.UID]int32{}
	seenRefs := map[types.UID]bool{}
	var unmanaged []string
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if seenRefs[ref.UID] {
			continue
		}
		s, err := find(ref, pod.Namespace)
		if err != nil {
			return 0, unmanaged, err
		}
		if s == nil {
			return 0, unmanaged, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		seenRefs[ref.UID] = true
		byUID[s.uid] = s.replicas
	}
	var total int32
	for _, n := range byUID {
		total += n
	}
	return total, unmanaged, nil
}

// disruptionsAllowed is currentHealthy - desiredHealthy, never negative,
// and 0 while no pods are expected (a budget that matches nothing yet must
// not let the first pods go before it has been synced with them).
func disruptionsAllowed(c counts, currentHealthy int32) int32 {
	if c.expected <= 0 || currentHealthy <= c.desired {
		return 0
	}
	return currentHealthy - c.desired
}
