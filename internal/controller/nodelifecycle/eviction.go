package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

// evictionTime says when a pod on a node with these taints must go: zero
// (now) when a NoExecute taint is not tolerated, never (ok false) when all
// are tolerated forever, else the earliest taint time plus toleration.
func evictionTime(pod *corev1.Pod, taints []corev1.Taint) (time.Time, bool) {
	var at time.Time
	found := false
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		seconds, tolerated := toleration(pod, taint)
		if !tolerated {
			return time.Time{}, true
		}
		if seconds == nil {
			continue
		}
		added := time.Time{}
		if taint.TimeAdded != nil {
			added = taint.TimeAdded.Time
		}
		when := added.Add(time.Duration(max(*seconds, 0)) * time.Second)
		if !found || when.Before(at) {
			at, found = when, true
		}
	}
	return at, found
}

// toleration finds the pod's tolerations of taint; seconds is the smallest
// tolerationSeconds among them, nil when none has a limit (tolerated forever),
// as upstream's taint manager counts.
func toleration(pod *corev1.Pod, taint *corev1.Taint) (*int64, bool) {
	var seconds *int64
	tolerated := false
	for i := range pod.Spec.Tolerations {
		t := &pod.Spec.Tolerations[i]
		if !t.ToleratesTaint(klog.Background(), taint, false) {
			continue
		}
		tolerated = true
		if t.TolerationSeconds != nil && (seconds == nil || *t.TolerationSeconds < *seconds) {
			seconds = t.TolerationSeconds
		}
	}
	return seconds, tolerated
}
