package job

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestIntervals(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		completions int
		add         []int
		want        string
		total       int
	}{
		{"empty", "", 10, nil, "", 0},
		{"one", "", 10, []int{3}, "3", 1},
		{"two adjacent are written with a comma", "", 10, []int{4, 5}, "4,5", 2},
		{"a range", "", 10, []int{2, 0, 1}, "0-2", 3},
		{"ranges and singles", "0-2", 10, []int{5, 7, 8}, "0-2,5,7,8", 6},
		{"filling a gap joins", "0-2,4-6", 10, []int{3}, "0-6", 7},
		{"duplicates count once", "1,2", 10, []int{1, 2, 2}, "1,2", 2},
		{"beyond completions is dropped", "0-3,8-12", 10, nil, "0-3,8,9", 6},
		{"garbage is skipped", "x,1-a,3,5-4,7", 10, nil, "3,7", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseIntervals(tt.in, tt.completions).with(tt.add...)
			if got.String() != tt.want || got.total() != tt.total {
				t.Fatalf("got %q (total %d), want %q (total %d)", got.String(), got.total(), tt.want, tt.total)
			}
		})
	}
}

func TestIntervalsHas(t *testing.T) {
	iv := parseIntervals("1-3,6,9-10", 20)
	for ix, want := range map[int]bool{0: false, 1: true, 3: true, 4: false, 6: true, 7: false, 9: true, 10: true, 11: false} {
		if got := iv.has(ix); got != want {
			t.Errorf("has(%d) = %v, want %v", ix, got, want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	for n, want := range map[int32]time.Duration{
		0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second,
		6: 320 * time.Second, 7: 10 * time.Minute, 30: 10 * time.Minute,
	} {
		if got := backoffDelay(n); got != want {
			t.Errorf("backoffDelay(%d) = %v, want %v", n, got, want)
		}
	}
}

func finishedPod(phase corev1.PodPhase, at time.Time) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at)}},
	}}}}
}

func TestBackoffRecord(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	failedAt := func(d time.Duration) *corev1.Pod { return finishedPod(corev1.PodFailed, t0.Add(d)) }
	succeededAt := func(d time.Duration) *corev1.Pod { return finishedPod(corev1.PodSucceeded, t0.Add(d)) }
	tests := []struct {
		name              string
		start             backoffRecord
		succeeded, failed []*corev1.Pod
		want              backoffRecord
	}{
		{"nothing new", backoffRecord{2, t0}, nil, nil, backoffRecord{2, t0}},
		{"failures add up", backoffRecord{1, t0}, nil, []*corev1.Pod{failedAt(5 * time.Second), failedAt(3 * time.Second)},
			backoffRecord{3, t0.Add(5 * time.Second)}},
		{"a success resets", backoffRecord{4, t0}, []*corev1.Pod{succeededAt(time.Second)}, nil, backoffRecord{}},
		{"only failures after the last success count", backoffRecord{4, t0},
			[]*corev1.Pod{succeededAt(10 * time.Second)}, []*corev1.Pod{failedAt(5 * time.Second), failedAt(15 * time.Second)},
			backoffRecord{1, t0.Add(15 * time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.start.after(tt.succeeded, tt.failed); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	r := backoffRecord{2, t0}
	if got := r.remaining(t0.Add(5 * time.Second)); got != 15*time.Second {
		t.Errorf("remaining 5s after the 2nd failure = %v, want 15s", got)
	}
	if got := r.remaining(t0.Add(time.Minute)); got != 0 {
		t.Errorf("remaining after the backoff = %v, want 0", got)
	}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func TestMatchFailurePolicy(t *testing.T) {
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{7}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{1, 2}}},
	}}
	pod := func(conds []corev1.PodCondition, statuses ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
			Status:     corev1.PodStatus{Phase: corev1.PodFailed, Conditions: conds, ContainerStatuses: statuses},
		}
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		action  batchv1.PodFailurePolicyAction
		counts  bool
		message string
	}{
		{"no rule matches", pod(nil, exited("main", 1)), "", true, ""},
		{"exit code 0 never matches", pod(nil, exited("main", 0)), "", true, ""},
		{"a disruption is ignored", pod([]corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}, exited("main", 42)),
			batchv1.PodFailurePolicyActionIgnore, false, ""},
		{"FailJob on the named container", pod(nil, exited("side", 1), exited("main", 42)), batchv1.PodFailurePolicyActionFailJob, true,
			"Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"},
		{"another container's 42 is only counted", pod(nil, exited("side", 42)), batchv1.PodFailurePolicyActionCount, true, ""},
		{"FailIndex", pod(nil, exited("main", 7)), batchv1.PodFailurePolicyActionFailIndex, true, ""},
		{"NotIn", pod(nil, exited("main", 3)), batchv1.PodFailurePolicyActionCount, true, ""},
		{"running containers have no exit code", pod(nil, corev1.ContainerStatus{Name: "main"}), "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := matchFailurePolicy(policy, tt.pod)
			if m.action != tt.action || m.counts() != tt.counts || m.message != tt.message {
				t.Fatalf("got %+v (counts %v), want action %q counts %v message %q", m, m.counts(), tt.action, tt.counts, tt.message)
			}
		})
	}
	if m := matchFailurePolicy(nil, pod(nil, exited("main", 42))); m.action != "" || !m.counts() {
		t.Fatalf("no policy: %+v", m)
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	rules := func(r ...batchv1.SuccessPolicyRule) *batchv1.SuccessPolicy { return &batchv1.SuccessPolicy{Rules: r} }
	tests := []struct {
		name      string
		policy    *batchv1.SuccessPolicy
		succeeded string
		want      string
	}{
		{"no policy", nil, "0-9", ""},
		{"count not reached", rules(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](3)}), "0,1", ""},
		{"count reached", rules(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](3)}), "0,1,5", "Matched rules at index 0"},
		{"all required indexes", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-3")}), "0-3", "Matched rules at index 0"},
		{"a required index missing", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-3")}), "0,1,3", ""},
		{"enough of the required indexes", rules(
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("5")},
			batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](2)}), "1,3,7", "Matched rules at index 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, ok := matchSuccessPolicy(tt.policy, 10, parseIntervals(tt.succeeded, 10))
			if msg != tt.want || ok != (tt.want != "") {
				t.Fatalf("got %q %v, want %q", msg, ok, tt.want)
			}
		})
	}
}

func TestWantActive(t *testing.T) {
	job := func(completions *int32, parallelism int32) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{Completions: completions, Parallelism: &parallelism}}
	}
	tests := []struct {
		name              string
		job               *batchv1.Job
		succeeded, active int32
		want              int32
	}{
		{"parallelism bounds", job(ptr.To[int32](10), 3), 0, 0, 3},
		{"remaining completions bound", job(ptr.To[int32](4), 3), 2, 3, 2},
		{"done", job(ptr.To[int32](4), 3), 5, 1, 0},
		{"work queue before a success", job(nil, 3), 0, 1, 3},
		{"work queue after a success lets the rest run", job(nil, 3), 1, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wantActive(tt.job, tt.succeeded, tt.active); got != tt.want {
				t.Fatalf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPendingIndexes(t *testing.T) {
	mode := batchv1.IndexedCompletion
	job := &batchv1.Job{Spec: batchv1.JobSpec{Completions: ptr.To[int32](8), CompletionMode: &mode}}
	withIndex := func(ix string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: ix}}}
	}
	failed := parseIntervals("5", 8)
	s := &syncState{job: job, active: []*corev1.Pod{withIndex("1"), withIndex("3")},
		succeededIndexes: parseIntervals("0,2", 8), failedIndexes: &failed}
	got := s.pendingIndexes(3)
	if want := []int{4, 6, 7}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestIndexedGenerateName(t *testing.T) {
	if got := indexedGenerateName("pi", 3); got != "pi-3-" {
		t.Fatalf("got %q", got)
	}
	long := "a123456789b123456789c123456789d123456789e123456789f123456789"
	if got := indexedGenerateName(long, 12); len(got) != maxGeneratedNameLength || got[len(got)-4:] != "-12-" {
		t.Fatalf("got %q (%d)", got, len(got))
	}
}

func TestPastBackoffLimitOnFailure(t *testing.T) {
	job := &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure}}}}
	running := func(restarts int32) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{RestartCount: restarts}}}}
	}
	if pastBackoffLimitOnFailure(job, []*corev1.Pod{running(1)}) {
		t.Fatal("1 restart of 2 allowed: past the limit")
	}
	if !pastBackoffLimitOnFailure(job, []*corev1.Pod{running(1), running(1)}) {
		t.Fatal("2 restarts of 2 allowed: not past the limit")
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if pastBackoffLimitOnFailure(job, []*corev1.Pod{running(5)}) {
		t.Fatal("restarts count only with OnFailure")
	}
}

func TestValidIndex(t *testing.T) {
	annotated := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "2"}}}
	workQueue := &batchv1.Job{} // NonIndexed, no completions
	if _, ok := validIndex(workQueue, annotated); ok {
		t.Fatal("a NonIndexed job has no valid indexes")
	}
	mode := batchv1.IndexedCompletion
	indexed := &batchv1.Job{Spec: batchv1.JobSpec{CompletionMode: &mode, Completions: ptr.To[int32](3)}}
	if ix, ok := validIndex(indexed, annotated); !ok || ix != 2 {
		t.Fatalf("got %d %v, want 2", ix, ok)
	}
	indexed.Spec.Completions = ptr.To[int32](2)
	if _, ok := validIndex(indexed, annotated); ok {
		t.Fatal("index 2 of 2 completions is valid")
	}
}
