package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// readyPod is a running pod whose Ready condition is ready and changed
// since ago before now.
func readyPod(now time.Time, ready bool, since time.Duration) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(now.Add(-since))},
	}}}
}

func TestPodAvailable(t *testing.T) {
	now := time.Now()
	tests := []struct {
		pod      *corev1.Pod
		minReady int32
		want     bool
	}{
		{readyPod(now, true, 0), 0, true}, {readyPod(now, false, time.Hour), 0, false},
		{readyPod(now, true, 5*time.Second), 10, false}, {readyPod(now, true, 10*time.Second), 10, true},
		{&corev1.Pod{}, 0, false},
	}
	for i, tt := range tests {
		if got := PodAvailable(tt.pod, tt.minReady, now); got != tt.want {
			t.Errorf("case %d: PodAvailable = %v", i, got)
		}
	}
}

func TestNextAvailabilityCheck(t *testing.T) {
	now := time.Now()
	pods := []*corev1.Pod{
		readyPod(now, true, 2*time.Second),  // available in 8s
		readyPod(now, true, 5*time.Second),  // available in 5s
		readyPod(now, false, 9*time.Second), // not ready
		readyPod(now, true, time.Minute),    // available before evaluated
	}
	if got, ok := NextAvailabilityCheck(pods, 10, now, now); !ok || got != 5*time.Second {
		t.Fatalf("got %v, %v; want 5s, true", got, ok)
	}
	if got, ok := NextAvailabilityCheck(pods, 10, now, now.Add(time.Minute)); !ok || got != 0 {
		t.Fatalf("later: got %v, %v; want 0, true", got, ok)
	}
	if _, ok := NextAvailabilityCheck(pods[3:], 10, now, now); ok {
		t.Fatal("a pod available before evaluated needs no check")
	}
}
