package replicaset

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/controller"
)

// podDeletionCostAnnotation lets users say which pods of a ReplicaSet to
// delete first on scale down (lower cost first).
const podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// phaseOrder ranks phases by how far along a pod is; phases not listed
// rank with Pending.
var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// podsToDelete picks n of pods to delete, preferring the pods least far
// along; related are the pods of the owner's siblings, used to prefer pods
// doubled up on a node.
func podsToDelete(pods, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if isPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	r := rankedPods{pods: append([]*corev1.Pod(nil), pods...), rank: make([]int, len(pods)), now: now}
	for i, p := range r.pods {
		r.rank[i] = onNode[p.Spec.NodeName]
	}
	sort.Sort(r)
	return r.pods[:n]
}

// rankedPods sorts pods so the first is the best to delete. In order, the
// rules are: unscheduled before scheduled; Pending before Unknown before
// Running; not ready before ready; lower pod-deletion-cost first; more
// colocated sibling pods (rank) first; ready more recently first; more
// container restarts first; created more recently first. Times are compared
// in logarithmic buckets of their age, so pods of about the same age count
// as equal and ties go by UID (a random but stable choice).
type rankedPods struct {
	pods []*corev1.Pod
	rank []int
	now  time.Time
}

func (r rankedPods) Len() int { return len(r.pods) }

func (r rankedPods) Swap(i, j int) {
	r.pods[i], r.pods[j] = r.pods[j], r.pods[i]
	r.rank[i], r.rank[j] = r.rank[j], r.rank[i]
}

func (r rankedPods) Less(i, j int) bool {
	a, b := r.pods[i], r.pods[j]
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseOrder[a.Status.Phase] != phaseOrder[b.Status.Phase] {
		return phaseOrder[a.Status.Phase] < phaseOrder[b.Status.Phase]
	}
	readyA, readyB := controller.PodReady(a), controller.PodReady(b)
	if readyA != readyB {
		return !readyA
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if r.rank[i] != r.rank[j] {
		return r.rank[i] > r.rank[j]
	}
	if readyA && readyB {
		ta, tb := readySince(a), readySince(b)
		if !ta.Equal(tb) {
			return r.newerFirst(ta, tb, a, b)
		}
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	if sa, sb := sidecarRestarts(a), sidecarRestarts(b); sa != sb {
		return sa > sb
	}
	ca, cb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ca.Equal(cb) {
		return r.newerFirst(ca, cb, a, b)
	}
	return false
}

// newerFirst orders two different times newest first; a zero time counts
// as the newest. Ages in the same power-of-two bucket tie, broken by UID.
func (r rankedPods) newerFirst(ta, tb time.Time, a, b *corev1.Pod) bool {
	if r.now.IsZero() || ta.IsZero() || tb.IsZero() {
		return afterOrZero(ta, tb)
	}
	diff := logBucket(r.now.Sub(ta)) - logBucket(r.now.Sub(tb))
	if diff == 0 {
		return a.UID < b.UID
	}
	return diff < 0
}

func afterOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b)
}

func logBucket(age time.Duration) int64 {
	if age <= 0 {
		return -1
	}
	return int64(math.Log2(float64(age)))
}

// deletionCost reads the pod-deletion-cost annotation; absent or invalid
// values cost 0.
func deletionCost(pod *corev1.Pod) int32 {
	v, ok := pod.Annotations[podDeletionCostAnnotation]
	if !ok || v == "" {
		return 0
	}
	// A leading '+' or a leading zero is invalid.
	if !(v[0] == '-' || v == "0" || ('1' <= v[0] && v[0] <= '9')) {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

// sidecarRestarts counts restarts of init containers that run for the
// pod's life (restartPolicy Always).
func sidecarRestarts(pod *corev1.Pod) int32 {
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	var n int32
	for _, c := range pod.Status.InitContainerStatuses {
		if sidecars[c.Name] {
			n = max(n, c.RestartCount)
		}
	}
	return n
}

// readySince is when the pod's Ready condition last turned true (zero if
// it is not ready).
func readySince(pod *corev1.Pod) time.Time {
	if c := controller.ReadyCondition(pod); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// isPodActive: not finished and not being deleted.
func isPodActive(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp == nil
}

// isPodTerminating: being deleted but not finished.
func isPodTerminating(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp != nil
}
