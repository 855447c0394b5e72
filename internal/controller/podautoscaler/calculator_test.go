package podautoscaler

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"
)

// The cases follow upstream's replica_calculator_test: pods of two
// containers, each requesting the pod's request, a CPU initialization
// period of 2 minutes and an initial readiness delay of 10 seconds.
var (
	testNow    = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	hot        = testNow                       // just started
	cool       = testNow.Add(-3 * time.Minute) // past initialization
	defaultTol = tolerances{0.1, 0.1}
	testReady  = readiness{now: testNow, cpuInitializationPeriod: 2 * time.Minute, initialReadinessDelay: 10 * time.Second}
)

// scenario describes a target's pods and the samples they report.
type scenario struct {
	current   int32
	requests  []string  // CPU request of each container, per pod; its length is the pod count
	levels    [][]int64 // levels[i][j]: usage of container j of pod i; a missing entry is a missing sample
	names     []string  // names of the samples, when not the pods'
	ready     []corev1.ConditionStatus
	start     []time.Time
	phase     []corev1.PodPhase
	deleting  []bool
	container string
}

// levels gives each of two containers of pod i usage[i].
func levels(usage ...int64) [][]int64 {
	out := make([][]int64, len(usage))
	for i, u := range usage {
		out[i] = []int64{u, u}
	}
	return out
}

func requests(n int, q string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = q
	}
	return out
}

func (s scenario) pods() []*corev1.Pod {
	n := max(int(s.current), len(s.phase), len(s.requests))
	var pods []*corev1.Pod
	for i := range n {
		status, phase, started := corev1.ConditionTrue, corev1.PodRunning, time.Time{}
		if i < len(s.ready) {
			status = s.ready[i]
		}
		if i < len(s.phase) {
			phase = s.phase[i]
		}
		if i < len(s.start) {
			started = s.start[i]
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "ns"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "container1"}, {Name: "container2"}}},
			Status: corev1.PodStatus{Phase: phase, StartTime: &metav1.Time{Time: started},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
		}
		if i < len(s.deleting) && s.deleting[i] {
			pod.DeletionTimestamp = &metav1.Time{Time: testNow}
		}
		if i < len(s.requests) {
			req := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.requests[i])}}
			pod.Spec.Containers[0].Resources, pod.Spec.Containers[1].Resources = req, req
		}
		pods = append(pods, pod)
	}
	return pods
}

// podMetrics are the PodMetrics the resource metrics API would list.
func (s scenario) podMetrics() []metricsv1beta1.PodMetrics {
	var out []metricsv1beta1.PodMetrics
	for i, usage := range s.levels {
		name := fmt.Sprintf("pod-%d", i)
		if i < len(s.names) {
			name = s.names[i]
		}
		m := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Window: metav1.Duration{Duration: time.Minute}, Containers: make([]metricsv1beta1.ContainerMetrics, 2)}
		for j, u := range usage {
			m.Containers[j] = metricsv1beta1.ContainerMetrics{Name: fmt.Sprintf("container%d", j+1),
				Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(u, resource.DecimalSI)}}
		}
		out = append(out, m)
	}
	return out
}

func TestUtilizationReplicas(t *testing.T) {
	mixed := []string{"0.9", "1.0", "1.1"}
	for _, tc := range []struct {
		name            string
		s               scenario
		target          int32
		tol             *tolerances
		wantReplicas    int32
		wantUtilization int32
		wantAverage     int64
		wantErr         string
	}{
		{name: "scale up", s: scenario{current: 3, requests: requests(3, "1.0"), levels: levels(300, 500, 700)},
			target: 30, wantReplicas: 5, wantUtilization: 50, wantAverage: 1000},
		{name: "scale up: container metric", s: scenario{current: 3, requests: requests(3, "1.0"), container: "container2",
			levels: [][]int64{{1000, 300}, {1000, 500}, {1000, 700}}}, target: 30, wantReplicas: 5, wantUtilization: 50, wantAverage: 500},
		{name: "scale up: unready pod scales less", s: scenario{current: 3, requests: requests(3, "1.0"), levels: levels(300, 500, 700),
			ready: []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionTrue}},
			target: 30, wantReplicas: 4, wantUtilization: 60, wantAverage: 1200},
		{name: "scale up: hot-CPU pod scales less", s: scenario{current: 3, requests: requests(3, "1.0"), levels: levels(300, 500, 700),
			start: []time.Time{hot, cool, cool}}, target: 30, wantReplicas: 4, wantUtilization: 60, wantAverage: 1200},
		{name: "no scale: unready pods ignored", s: scenario{current: 3, requests: requests(3, "1.0"), levels: levels(400, 500, 700),
			ready: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionFalse}},
			target: 30, wantReplicas: 3, wantUtilization: 40, wantAverage: 800},
		{name: "scale up: failed pods ignored", s: scenario{current: 2, requests: requests(4, "1.0"), levels: levels(500, 700),
			ready: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionFalse},
			phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodFailed, corev1.PodFailed}},
			target: 30, wantReplicas: 4, wantUtilization: 60, wantAverage: 1200},
		{name: "scale up: pods being deleted ignored", s: scenario{current: 2, requests: requests(4, "1.0"), levels: levels(500, 700),
			ready:    []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionFalse},
			deleting: []bool{false, false, true, true}}, target: 30, wantReplicas: 4, wantUtilization: 60, wantAverage: 1200},
		{name: "scale down", s: scenario{current: 5, requests: requests(5, "1.0"), levels: levels(100, 300, 500, 250, 250)},
			target: 50, wantReplicas: 3, wantUtilization: 28, wantAverage: 560},
		{name: "scale down: unready pods excluded", s: scenario{current: 5, requests: requests(5, "1.0"), levels: levels(100, 300, 500, 250, 250),
			ready: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionFalse}},
			target: 50, wantReplicas: 2, wantUtilization: 30, wantAverage: 600},
		{name: "scale down: pending pods excluded", s: scenario{current: 5, requests: requests(5, "1.0"), levels: levels(100),
			ready: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionFalse, corev1.ConditionFalse, corev1.ConditionFalse},
			phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodPending, corev1.PodPending, corev1.PodPending}},
			target: 50, wantReplicas: 1, wantUtilization: 10, wantAverage: 200},
		{name: "scale down: hot-CPU pods ignored", s: scenario{current: 5, requests: requests(5, "1.0"), levels: levels(100, 300, 500, 250, 250),
			start: []time.Time{cool, cool, cool, hot, hot}}, target: 50, wantReplicas: 2, wantUtilization: 30, wantAverage: 600},
		// Tolerance.
		{name: "within default tolerance", s: scenario{current: 3, requests: mixed, levels: levels(1010, 1030, 1020)},
			target: 100, wantReplicas: 3, wantUtilization: 102, wantAverage: 2040},
		{name: "outside 0% tolerance", tol: &tolerances{0, 0}, s: scenario{current: 3, requests: mixed, levels: levels(909, 1010, 1111)},
			target: 100, wantReplicas: 4, wantUtilization: 101, wantAverage: 2020},
		{name: "within 200% scale-up tolerance", tol: &tolerances{0.1, 2}, s: scenario{current: 3, requests: mixed, levels: levels(1890, 1910, 1900)},
			target: 100, wantReplicas: 3, wantUtilization: 190, wantAverage: 3800},
		{name: "within 36% scale-down tolerance", tol: &tolerances{0.36, 0.1}, s: scenario{current: 3, requests: mixed, levels: levels(660, 640, 650)},
			target: 100, wantReplicas: 3, wantUtilization: 65, wantAverage: 1300},
		{name: "outside 34% scale-down tolerance", tol: &tolerances{0.34, 0.1}, s: scenario{current: 3, requests: mixed, levels: levels(660, 640, 650)},
			target: 100, wantReplicas: 2, wantUtilization: 65, wantAverage: 1300},
		// Missing and superfluous samples.
		{name: "superfluous samples counted", s: scenario{current: 4, requests: requests(4, "1.0"), levels: levels(4000, 9500, 3000, 7000, 3200, 2000)},
			target: 100, wantReplicas: 24, wantUtilization: 587, wantAverage: 11750},
		{name: "missing samples count as 100% on a scale-down", s: scenario{current: 4, requests: requests(4, "1.0"), levels: levels(400, 95)},
			target: 100, wantReplicas: 3, wantUtilization: 24, wantAverage: 495},
		{name: "no change: metric above target but samples missing", s: scenario{current: 2, requests: requests(2, "1.0"), levels: levels(1900)},
			target: 100, wantReplicas: 2, wantUtilization: 190, wantAverage: 3800},
		{name: "no change: metric below target but samples missing", s: scenario{current: 2, requests: requests(2, "1.0"), levels: levels(600)},
			target: 100, wantReplicas: 2, wantUtilization: 60, wantAverage: 1200},
		{name: "no change: unready pod's sample missing", s: scenario{current: 3, requests: requests(3, "1.0"), levels: levels(100, 450),
			ready: []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionTrue}},
			target: 50, wantReplicas: 3, wantUtilization: 45, wantAverage: 900},
		{name: "scale up: unready pod's sample missing", s: scenario{current: 3, requests: requests(3, "1.0"), levels: levels(100, 2000),
			ready: []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionTrue}},
			target: 50, wantReplicas: 4, wantUtilization: 200, wantAverage: 4000},
		{name: "scale down: unready pod's sample missing", s: scenario{current: 4, requests: requests(4, "1.0"), levels: levels(100, 100, 100),
			ready: []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionTrue}},
			target: 50, wantReplicas: 3, wantUtilization: 10, wantAverage: 200},
		{name: "scale down: missing pod at a target over 100%", s: scenario{current: 4, requests: []string{"1.0", "1.0", "2.0", "2.0"},
			levels: levels(200, 100, 100), ready: []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionTrue}},
			target: 300, wantReplicas: 2, wantUtilization: 6, wantAverage: 200},
		{name: "rolling update: surge pod without a sample", s: scenario{current: 2, requests: requests(3, "1.0"), levels: levels(100, 100)},
			target: 50, wantReplicas: 2, wantUtilization: 10, wantAverage: 200},
		// Failures.
		{name: "samples of other pods only", s: scenario{current: 1, requests: requests(1, "1.0"), levels: levels(100), names: []string{"an-older-pod"}},
			target: 100, wantErr: "no metrics returned matched known pods"},
		{name: "no request", s: scenario{current: 1, levels: levels(200)}, target: 100, wantErr: "missing request for cpu in container container1 of Pod pod-0"},
		{name: "no pods", s: scenario{levels: levels(200)}, target: 100, wantErr: "no pods returned by selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			samples, _, err := resourceSamples(tc.s.podMetrics(), corev1.ResourceCPU, tc.s.container)
			if err != nil {
				t.Fatal(err)
			}
			tol := defaultTol
			if tc.tol != nil {
				tol = *tc.tol
			}
			in := calcInput{pods: tc.s.pods(), metrics: samples, currentReplicas: tc.s.current, tolerances: tol, readiness: testReady}
			replicas, utilization, average, err := utilizationReplicas(in, corev1.ResourceCPU, tc.s.container, tc.target)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if replicas != tc.wantReplicas || utilization != tc.wantUtilization || average != tc.wantAverage {
				t.Errorf("got %d replicas, %d%%, average %d; want %d, %d%%, %d", replicas, utilization, average,
					tc.wantReplicas, tc.wantUtilization, tc.wantAverage)
			}
			if len(samples) != len(in.metrics) {
				t.Error("the calculation changed its input samples")
			}
		})
	}
}

func TestResourceSamplesWithoutMetrics(t *testing.T) {
	if _, _, err := resourceSamples(nil, corev1.ResourceCPU, ""); err == nil || err.Error() != "no metrics returned from resource metrics API" {
		t.Fatalf("err = %v", err)
	}
}

func TestAverageValueReplicas(t *testing.T) {
	sample := func(values ...int64) podMetrics {
		out := podMetrics{}
		for i, v := range values {
			out[fmt.Sprintf("pod-%d", i)] = podMetric{Value: v}
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		s            scenario
		samples      podMetrics
		target       int64
		tol          *tolerances
		wantReplicas int32
		wantAverage  int64
	}{
		{name: "scale up", s: scenario{current: 3}, samples: sample(20000, 10000, 30000), target: 15000, wantReplicas: 4, wantAverage: 20000},
		{name: "readiness does not matter for custom metrics", s: scenario{current: 3, start: []time.Time{cool, cool, hot},
			ready: []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse}},
			samples: sample(50000, 10000, 30000), target: 15000, wantReplicas: 6, wantAverage: 30000},
		{name: "scale down", s: scenario{current: 5}, samples: sample(12000, 12000, 12000, 12000, 12000), target: 20000, wantReplicas: 3, wantAverage: 12000},
		{name: "within tolerance", s: scenario{current: 3}, samples: sample(20000, 21000, 21000), target: 20000, wantReplicas: 3, wantAverage: 20666},
		{name: "outside 1% tolerance", tol: &tolerances{0.1, 0.01}, s: scenario{current: 3}, samples: sample(20000, 21000, 21000), target: 20000, wantReplicas: 4, wantAverage: 20666},
		{name: "no change: missing samples", s: scenario{current: 5}, samples: sample(20000, 19000, 21000), target: 20000, wantReplicas: 5, wantAverage: 20000},
		{name: "rolling update: surge pod without a sample", s: scenario{current: 2, phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning}},
			samples: sample(10000, 10000), target: 17000, wantReplicas: 2, wantAverage: 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tol := defaultTol
			if tc.tol != nil {
				tol = *tc.tol
			}
			in := calcInput{pods: tc.s.pods(), metrics: tc.samples, currentReplicas: tc.s.current, tolerances: tol, readiness: testReady}
			replicas, average, err := averageValueReplicas(in, "", tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if replicas != tc.wantReplicas || average != tc.wantAverage {
				t.Errorf("got %d replicas, average %d; want %d, %d", replicas, average, tc.wantReplicas, tc.wantAverage)
			}
		})
	}
}

func TestWholeTargetMetrics(t *testing.T) {
	ready := func(s ...corev1.ConditionStatus) []*corev1.Pod {
		return scenario{current: int32(len(s)), ready: s}.pods()
	}
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	t.Run("object value", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			current int32
			pods    []*corev1.Pod
			usage   int64
			target  int64
			tol     tolerances
			want    int32
		}{
			{"scale up", 3, ready(T, T, T), 20000, 15000, defaultTol, 4},
			{"unready pods ignored", 3, ready(F, T, F), 50000, 10000, defaultTol, 5},
			{"scale down", 5, ready(T, T, T, T, T), 12000, 20000, defaultTol, 3},
			{"within tolerance", 3, ready(T, T, T), 20666, 20000, defaultTol, 3},
			{"outside 1% tolerance", 3, ready(T, T, T), 20666, 20000, tolerances{0.1, 0.01}, 4},
			{"huge usage saturates", 3, ready(T, T, T), math.MaxInt64, 1, defaultTol, math.MaxInt32},
			{"from zero: the ratio rounded up", 0, nil, 25000, 10000, defaultTol, 3},
		} {
			got, err := ratioReplicas(tc.current, float64(tc.usage)/float64(tc.target), tc.tol, tc.pods)
			if err != nil || got != tc.want {
				t.Errorf("%s: got %d (%v), want %d", tc.name, got, err, tc.want)
			}
		}
	})
	t.Run("per pod", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			status      int32
			total       int64
			perPod      int64
			tol         tolerances
			want        int32
			wantAverage int64
		}{
			{"scale up", 3, 20000, 5000, defaultTol, 4, 6667},
			{"scale down", 5, 6000, 2000, defaultTol, 3, 1200},
			{"within tolerance", 4, 20166, 5000, defaultTol, 4, 5042},
			{"outside 1% tolerance", 4, 20208, 5000, tolerances{0.1, 0.01}, 5, 5052},
			{"overflowing total saturates", 1, sumCapped([]int64{math.MaxInt64, 1}), 1, defaultTol, math.MaxInt32, math.MaxInt64},
			{"huge target changes nothing", 1, math.MaxInt64, math.MaxInt64, defaultTol, 1, math.MaxInt64},
		} {
			got, average := perPodReplicas(tc.status, tc.total, tc.perPod, tc.tol)
			if got != tc.want || average != tc.wantAverage {
				t.Errorf("%s: got %d, average %d; want %d, %d", tc.name, got, average, tc.want, tc.wantAverage)
			}
		}
	})
}

func TestPodRequests(t *testing.T) {
	sidecar := corev1.Container{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
	init := corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}}}
	pod := scenario{current: 1, requests: []string{"200m"}}.pods()[0]
	pod.Spec.InitContainers = []corev1.Container{init, sidecar}
	got, err := podRequests([]*corev1.Pod{pod}, "", corev1.ResourceCPU)
	if err != nil || got["pod-0"] != 500 {
		t.Errorf("containers and sidecar: %v (%v), want 500m", got, err)
	}
	got, err = podRequests([]*corev1.Pod{pod}, "container2", corev1.ResourceCPU)
	if err != nil || got["pod-0"] != 200 {
		t.Errorf("one container: %v (%v), want 200m", got, err)
	}
	if _, err := podRequests([]*corev1.Pod{pod}, "nope", corev1.ResourceCPU); err == nil || err.Error() != "container nope not found in Pod pod-0" {
		t.Errorf("unknown container: %v", err)
	}
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	got, err = podRequests([]*corev1.Pod{pod}, "", corev1.ResourceCPU)
	if err != nil || got["pod-0"] != 2000 {
		t.Errorf("pod-level request: %v (%v), want 2", got, err)
	}
}
