package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestGetPhase(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	exit := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	type st = map[string]corev1.ContainerState
	for _, tc := range []struct {
		name     string
		policy   corev1.RestartPolicy
		states   st
		terminal bool
		want     corev1.PodPhase
	}{
		{"no statuses", corev1.RestartPolicyAlways, st{}, false, corev1.PodPending},
		{"one unknown", corev1.RestartPolicyAlways, st{"a": running}, false, corev1.PodPending},
		{"all running", corev1.RestartPolicyAlways, st{"a": running, "b": running}, false, corev1.PodRunning},
		{"one waiting", corev1.RestartPolicyAlways, st{"a": running, "b": waiting}, false, corev1.PodPending},
		{"running and exited", corev1.RestartPolicyNever, st{"a": running, "b": exit(1)}, false, corev1.PodRunning},
		{"all exited 0, Never", corev1.RestartPolicyNever, st{"a": exit(0), "b": exit(0)}, false, corev1.PodSucceeded},
		{"one failed, Never", corev1.RestartPolicyNever, st{"a": exit(0), "b": exit(2)}, false, corev1.PodFailed},
		{"all exited 0, OnFailure", corev1.RestartPolicyOnFailure, st{"a": exit(0), "b": exit(0)}, false, corev1.PodSucceeded},
		{"one failed, OnFailure", corev1.RestartPolicyOnFailure, st{"a": exit(0), "b": exit(1)}, false, corev1.PodRunning},
		{"all exited, Always", corev1.RestartPolicyAlways, st{"a": exit(0), "b": exit(0)}, false, corev1.PodRunning},
		{"all exited 0, Always, terminal", corev1.RestartPolicyAlways, st{"a": exit(0), "b": exit(0)}, true, corev1.PodSucceeded},
		{"one failed, Always, terminal", corev1.RestartPolicyAlways, st{"a": exit(0), "b": exit(137)}, true, corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy,
				Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
			var statuses []corev1.ContainerStatus
			for _, name := range []string{"a", "b"} {
				if s, ok := tc.states[name]; ok {
					statuses = append(statuses, corev1.ContainerStatus{Name: name, State: s})
				}
			}
			if got := getPhase(pod, nil, statuses, tc.terminal); got != tc.want {
				t.Errorf("getPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestGetPhaseWaitingAfterTermination(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "a"}}}}
	statuses := []corev1.ContainerStatus{{Name: "a",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	if got := getPhase(pod, nil, statuses, false); got != corev1.PodFailed {
		t.Errorf("getPhase = %s, want Failed (a waiting container that ran counts as stopped)", got)
	}
}

func TestPodStatusKeepsTransitionTimesAndPodIPs(t *testing.T) {
	pod := testPod("p", corev1.RestartPolicyAlways)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	state := podState{
		sandbox: &runtimeapi.PodSandboxStatus{State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.42.0.5", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::5"}}}},
		containers: map[string]*runtimeapi.ContainerStatus{"main": {Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING,
			StartedAt: t0.Add(1500 * time.Millisecond).UnixNano(), ImageRef: "sha256:x"}},
	}
	s := podStatus(pod, state, nil, nil, []string{"10.0.0.1"}, t0)
	if s.PodIP != "10.42.0.5" || len(s.PodIPs) != 2 || s.PodIPs[1].IP != "fd00::5" {
		t.Errorf("pod IPs %q %v", s.PodIP, s.PodIPs)
	}
	if got := s.ContainerStatuses[0].State.Running.StartedAt.Time; !got.Equal(t0.Add(time.Second)) {
		t.Errorf("startedAt %v, want whole seconds", got)
	}
	pod.Status = s
	later := podStatus(pod, state, nil, nil, []string{"10.0.0.1"}, t0.Add(time.Hour))
	for _, c := range later.Conditions {
		if !c.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("condition %s moved to %v though its status did not change", c.Type, c.LastTransitionTime)
		}
	}
	if !later.StartTime.Time.Equal(t0) {
		t.Errorf("startTime moved to %v", later.StartTime)
	}
}

// The status and the kubelet's conditions carry the generation of the spec
// they describe; the scheduler's condition keeps its own.
func TestPodStatusObservedGeneration(t *testing.T) {
	pod := testPod("p", corev1.RestartPolicyAlways)
	pod.Generation = 7
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: 1}}
	s := podStatus(pod, podState{}, nil, nil, nil, time.Now())
	if s.ObservedGeneration != 7 {
		t.Errorf("observedGeneration = %d, want 7", s.ObservedGeneration)
	}
	for _, c := range s.Conditions {
		want := int64(7)
		if c.Type == corev1.PodScheduled {
			want = 1
		}
		if c.ObservedGeneration != want {
			t.Errorf("condition %s observedGeneration = %d, want %d", c.Type, c.ObservedGeneration, want)
		}
	}
}

// The tail of a CRI log, as FallbackToLogsOnError reads it: partial lines
// joined, and output that ended without a newline kept as it is.
func TestLogTail(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
	}{
		{"full lines", "2026-01-01T00:00:00Z stdout F one\n2026-01-01T00:00:01Z stdout F two\n", "one\ntwo\n"},
		{"no newline at the end", "2026-01-01T00:00:00Z stdout P DONE\n", "DONE"},
		{"partials joined", "2026-01-01T00:00:00Z stdout P ab\n2026-01-01T00:00:00Z stdout F cd\n", "abcd\n"},
		{"last lines only", "t stdout F 1\nt stdout F 2\nt stdout F 3\n", "2\n3\n"},
	} {
		if got := logTail([]byte(tc.log), 2, 100); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
