package podautoscaler

import (
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelpers "k8s.io/component-helpers/resource"

	"orch/internal/controller"
)

// podMetric is one pod's sample of a metric, as a milli-value, with when
// it was taken and over how long.
type podMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64
}

// podMetrics are samples by pod name.
type podMetrics map[string]podMetric

// tolerances are how far below (scaleDown) and above (scaleUp) 1.0 a usage
// ratio may be without the replica count changing.
type tolerances struct {
	scaleDown, scaleUp float64
}

// within tells whether ratio is too close to 1.0 to act on.
func (t tolerances) within(ratio float64) bool {
	return ratio >= 1-t.scaleDown && ratio <= 1+t.scaleUp
}

func (t tolerances) String() string {
	return fmt.Sprintf("[down:%.1f%%, up:%.1f%%]", t.scaleDown*100, t.scaleUp*100)
}

// readiness says which pods' CPU samples can be trusted at now: a pod
// that started less than cpuInitializationPeriod ago counts only once it
// is ready and a whole sample window has passed since it became so; an
// older pod is left out only while it has never been ready since it
// started (it turned unready within initialReadinessDelay of its start).
type readiness struct {
	now                     time.Time
	cpuInitializationPeriod time.Duration
	initialReadinessDelay   time.Duration
}

// podGroups sorts the pods of a target for a calculation.
type podGroups struct {
	ready   int                 // pods whose sample counts
	unready map[string]struct{} // pending, or (CPU) not yet trustworthy
	missing map[string]struct{} // running without a sample
	ignored map[string]struct{} // being deleted, or failed
}

// groupPods sorts pods by how their samples in metrics are treated; only
// CPU samples depend on readiness.
func groupPods(pods []*corev1.Pod, metrics podMetrics, resource corev1.ResourceName, r readiness) podGroups {
	g := podGroups{unready: map[string]struct{}{}, missing: map[string]struct{}{}, ignored: map[string]struct{}{}}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			g.ignored[pod.Name] = struct{}{}
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			g.unready[pod.Name] = struct{}{}
			continue
		}
		sample, ok := metrics[pod.Name]
		if !ok {
			g.missing[pod.Name] = struct{}{}
			continue
		}
		if resource == corev1.ResourceCPU && cpuSampleUnready(pod, sample, r) {
			g.unready[pod.Name] = struct{}{}
			continue
		}
		g.ready++
	}
	return g
}

// cpuSampleUnready tells whether the CPU sample of pod is not to be trusted yet.
func cpuSampleUnready(pod *corev1.Pod, sample podMetric, r readiness) bool {
	cond := controller.ReadyCondition(pod)
	if cond == nil || pod.Status.StartTime == nil {
		return true
	}
	started := pod.Status.StartTime.Time
	if started.Add(r.cpuInitializationPeriod).After(r.now) {
		return cond.Status == corev1.ConditionFalse || sample.Timestamp.Before(cond.LastTransitionTime.Add(sample.Window))
	}
	return cond.Status == corev1.ConditionFalse && started.Add(r.initialReadinessDelay).After(cond.LastTransitionTime.Time)
}

// podRequests returns each pod's request of resource in milli-units: of
// container alone when it is named; otherwise the pod-level request when
// the pod sets one, else the sum over its containers and restartable
// (sidecar) init containers, every one of which must request it.
func podRequests(pods []*corev1.Pod, container string, resource corev1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, pod := range pods {
		if container == "" && resourcehelpers.IsPodLevelRequestsSet(pod) {
			q, ok := resourcehelpers.PodRequests(pod, resourcehelpers.PodResourcesOptions{})[resource]
			if !ok {
				return nil, fmt.Errorf("missing pod-level request for %s in Pod %s", resource, pod.Name)
			}
			out[pod.Name] = q.MilliValue()
			continue
		}
		request, err := containerRequests(pod, container, resource)
		if err != nil {
			return nil, err
		}
		out[pod.Name] = request
	}
	return out, nil
}

func containerRequests(pod *corev1.Pod, container string, resource corev1.ResourceName) (int64, error) {
	containers := pod.Spec.Containers
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers[:len(containers):len(containers)], c)
		}
	}
	var sum int64
	for _, c := range containers {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Resources.Requests[resource]
		if !ok {
			return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, pod.Name)
		}
		if container != "" {
			return q.MilliValue(), nil
		}
		sum += q.MilliValue()
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, pod.Name)
	}
	return sum, nil
}

// utilizationRatio compares the samples of the pods that have a request
// with those requests: the ratio of their utilization to target, the
// utilization (percent of the requests) and the average sample.
func utilizationRatio(metrics podMetrics, requests map[string]int64, target int32) (ratio float64, utilization int32, average int64, err error) {
	var used, requested, n int64
	for name, m := range metrics {
		r, ok := requests[name]
		if !ok {
			continue // a sample of a pod not (or no longer) listed
		}
		used += m.Value
		requested += r
		n++
	}
	if requested == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	utilization = int32(used * 100 / requested)
	return float64(utilization) / float64(target), utilization, used / n, nil
}

// usageRatio is the ratio of the average sample to target, and that average.
func usageRatio(metrics podMetrics, target int64) (float64, int64) {
	var sum int64
	for _, m := range metrics {
		sum += m.Value
	}
	average := sum / int64(len(metrics))
	return float64(average) / float64(target), average
}

// calcInput is what a per-pod calculation starts from.
type calcInput struct {
	pods            []*corev1.Pod // the pods the target's selector matches
	metrics         podMetrics    // their samples (not modified)
	currentReplicas int32
	tolerances      tolerances
	readiness       readiness
}

// ratioFunc recomputes a usage ratio over a changed set of samples.
type ratioFunc func(podMetrics) (float64, error)

// utilizationReplicas is the replica count that brings resource's
// utilization (percent of the requests) to target, with the utilization
// and the average sample seen.
func utilizationReplicas(in calcInput, resource corev1.ResourceName, container string, target int32) (replicas, utilization int32, average int64, err error) {
	if len(in.pods) == 0 {
		return 0, 0, 0, errors.New("no pods returned by selector while calculating replica count")
	}
	metrics := clone(in.metrics)
	g := groupPods(in.pods, metrics, resource, in.readiness)
	drop(metrics, g.ignored, g.unready)
	if len(metrics) == 0 {
		return 0, 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	requests, err := podRequests(in.pods, container, resource)
	if err != nil {
		return 0, 0, 0, err
	}
	ratio, utilization, average, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, 0, 0, err
	}
	// A pod without a sample uses its whole request (or the target, when
	// above 100%) when scaling down; nothing when scaling up.
	fallback := int64(max(100, target))
	missing := func(name string) int64 { return requests[name] * fallback / 100 }
	replicas, err = adjustForGaps(in, g, metrics, ratio, missing, func(m podMetrics) (float64, error) {
		r, _, _, err := utilizationRatio(m, requests, target)
		return r, err
	})
	return replicas, utilization, average, err
}

// averageValueReplicas is the replica count that brings the average
// sample to target (milli-units), with the average seen; resource is
// the resource measured, or "" for a metric of the pods that is no
// resource.
func averageValueReplicas(in calcInput, resource corev1.ResourceName, target int64) (replicas int32, average int64, err error) {
	if len(in.pods) == 0 {
		return 0, 0, errors.New("no pods returned by selector while calculating replica count")
	}
	metrics := clone(in.metrics)
	g := groupPods(in.pods, metrics, resource, in.readiness)
	drop(metrics, g.ignored, g.unready)
	if len(metrics) == 0 {
		return 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, average := usageRatio(metrics, target)
	// A pod without a sample is at the target when scaling down.
	replicas, err = adjustForGaps(in, g, metrics, ratio, func(string) int64 { return target }, func(m podMetrics) (float64, error) {
		r, _ := usageRatio(m, target)
		return r, nil
	})
	return replicas, average, err
}

// adjustForGaps finishes a per-pod calculation whose first ratio came
// from the ready pods' samples (metrics): when some pods have no sample,
// or some unready pods would be outnumbered in a scale-up, it fills the
// gaps conservatively (missing pods use missing(name) on a scale-down and
// nothing on a scale-up; unready pods nothing on a scale-up) and keeps
// the current count when that would flip the direction or land within
// tolerance.
func adjustForGaps(in calcInput, g podGroups, metrics podMetrics, ratio float64, missing func(string) int64, recompute ratioFunc) (int32, error) {
	scaleUpWithUnready := len(g.unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if in.tolerances.within(ratio) {
			return in.currentReplicas, nil
		}
		return int32(math.Ceil(ratio * float64(g.ready))), nil
	}
	for name := range g.missing {
		switch {
		case ratio < 1.0:
			metrics[name] = podMetric{Value: missing(name)}
		case ratio > 1.0:
			metrics[name] = podMetric{Value: 0}
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = podMetric{Value: 0}
		}
	}
	newRatio, err := recompute(metrics)
	if err != nil {
		return 0, err
	}
	if in.tolerances.within(newRatio) || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return in.currentReplicas, nil
	}
	replicas := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && replicas > in.currentReplicas) || (newRatio > 1.0 && replicas < in.currentReplicas) {
		return in.currentReplicas, nil
	}
	return replicas, nil
}

// readyPods counts the running, ready pods.
func readyPods(pods []*corev1.Pod) int64 {
	var n int64
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodRunning && controller.PodReady(pod) {
			n++
		}
	}
	return n
}

// ratioReplicas is the replica count for a usage ratio of a whole-target
// metric (an object's value, an external total): the current count within
// tolerance, else the ratio times the ready pods. From zero replicas it
// is the ratio rounded up, so that a target can come back from zero.
func ratioReplicas(current int32, ratio float64, tol tolerances, pods []*corev1.Pod) (int32, error) {
	if current == 0 {
		return int32(math.Ceil(ratio)), nil
	}
	if tol.within(ratio) {
		return current, nil
	}
	if len(pods) == 0 {
		return 0, errors.New("unable to calculate ready pods: no pods returned by selector while calculating replica count")
	}
	return clampInt32(math.Ceil(ratio * float64(readyPods(pods)))), nil
}

// perPodReplicas is the replica count that brings a total (an object's
// or external metric's value) to targetPerPod per replica, from the
// target's status replicas, with the average per replica seen.
func perPodReplicas(statusReplicas int32, total, targetPerPod int64, tol tolerances) (int32, int64) {
	replicas := statusReplicas
	if !tol.within(float64(total) / (float64(targetPerPod) * float64(statusReplicas))) {
		replicas = clampInt32(math.Ceil(float64(total) / float64(targetPerPod)))
	}
	if total == math.MaxInt64 || statusReplicas <= 0 {
		return replicas, total
	}
	return replicas, int64(math.Ceil(float64(total) / float64(statusReplicas)))
}

// sumCapped adds values, stopping at math.MaxInt64 on overflow.
func sumCapped(values []int64) int64 {
	var sum int64
	for _, v := range values {
		if v > 0 && sum > math.MaxInt64-v {
			return math.MaxInt64
		}
		sum += v
	}
	return sum
}

func clampInt32(f float64) int32 {
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(f)
}

func clone(m podMetrics) podMetrics {
	out := make(podMetrics, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func drop(m podMetrics, sets ...map[string]struct{}) {
	for _, s := range sets {
		for name := range s {
			delete(m, name)
		}
	}
}
