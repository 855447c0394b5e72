package replicaset

import (
	"errors"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSlowStartBatch(t *testing.T) {
	fail := errors.New("quota exceeded")
	tests := []struct {
		name      string
		count     int
		failAfter int // calls that succeed before every call fails; -1: never fail
		wantOK    int
		wantCalls int
	}{
		{"all succeed", 10, -1, 10, 10},      // batches 1, 2, 4, 3
		{"first fails", 10, 0, 0, 1},         // batch of 1 fails: stop
		{"fails in batch of 2", 10, 2, 2, 3}, // 1 ok, then batch of 2: 1 ok 1 fails
		{"fails in batch of 4", 20, 5, 5, 7}, // 1 + 2 ok, batch of 4: 2 ok 2 fail
		{"nothing to do", 0, -1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			ok, err := slowStartBatch(tt.count, 1, func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if tt.failAfter >= 0 && calls > tt.failAfter {
					return fail
				}
				return nil
			})
			if ok != tt.wantOK || calls != tt.wantCalls {
				t.Fatalf("successes %d calls %d, want %d and %d", ok, calls, tt.wantOK, tt.wantCalls)
			}
			if (err != nil) != (tt.wantOK < tt.count) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestCalculateStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	labels := map[string]string{"app": "web", "tier": "fe"}
	rs := newRS("web", 3, map[string]string{"app": "web"})
	rs.Spec.Template.Labels = labels
	rs.Spec.MinReadySeconds = 10
	pod := func(l map[string]string, readyFor time.Duration) *corev1.Pod {
		p := newPod("p", l)
		if readyFor >= 0 {
			p.Status = readyStatus(now.Add(-readyFor))
		}
		return p
	}
	active := []*corev1.Pod{
		pod(labels, time.Minute),                 // fully labeled, available
		pod(labels, 5*time.Second),               // ready, not yet available
		pod(map[string]string{"app": "web"}, -1), // not fully labeled, not ready
	}
	terminating := []*corev1.Pod{pod(labels, -1)}
	st := calculateStatus(rs, active, terminating, nil, true, now)
	if st.Replicas != 3 || st.FullyLabeledReplicas != 2 || st.ReadyReplicas != 2 || st.AvailableReplicas != 1 || *st.TerminatingReplicas != 1 {
		t.Fatalf("status %+v", st)
	}
	st = calculateStatus(rs, active[:1], nil, errors.New("boom"), false, now)
	if st.TerminatingReplicas != nil {
		t.Fatal("terminatingReplicas set for a kind without it")
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Reason != "FailedCreate" || st.Conditions[0].Message != "boom" {
		t.Fatalf("conditions %+v", st.Conditions)
	}
	rs.Status = st
	if st = calculateStatus(rs, active, nil, nil, false, now); len(st.Conditions) != 0 {
		t.Fatalf("ReplicaFailure not cleared: %+v", st.Conditions)
	}
}

func TestReplicationControllerConversion(t *testing.T) {
	replicas := int32(3)
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "ns", UID: "u", ResourceVersion: "7", Generation: 2},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: &replicas, MinReadySeconds: 4, Selector: map[string]string{"a": "b"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}},
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 2,
			Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}},
		},
	}
	rs := rcToRS(rc)
	if rs.Spec.Selector.MatchLabels["a"] != "b" || *rs.Spec.Replicas != 3 || rs.Status.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure {
		t.Fatalf("rcToRS: %+v", rs)
	}
	back := rsToRC(rs)
	if !equality.Semantic.DeepEqual(back.Spec, rc.Spec) || !equality.Semantic.DeepEqual(back.Status, rc.Status) || back.ResourceVersion != "7" {
		t.Fatalf("round trip changed the object:\n%+v\n%+v", back, rc)
	}
}

func TestPodFromTemplate(t *testing.T) {
	rs := newRS("web", 1, map[string]string{"app": "web"})
	rs.UID = "uid-1"
	rs.Spec.Template.Annotations = map[string]string{"a": "1"}
	rs.Spec.Template.Finalizers = []string{"example.com/f"}
	pod := podFromTemplate(&rs.Spec.Template, rs.Name, controllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")))
	ref := pod.OwnerReferences[0]
	if pod.GenerateName != "web-" || pod.Labels["app"] != "web" || pod.Annotations["a"] != "1" || pod.Finalizers[0] != "example.com/f" {
		t.Fatalf("pod %+v", pod.ObjectMeta)
	}
	if ref.APIVersion != "apps/v1" || ref.Kind != "ReplicaSet" || ref.UID != "uid-1" || !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Fatalf("ownerReference %+v", ref)
	}
}
