package nodelifecycle

import (
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAssess(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	node := func(status corev1.ConditionStatus, heartbeat time.Duration) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(now.Add(-heartbeat))}}}}
	}
	lease := func(age time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-age)))}}
	}
	cases := []struct {
		name  string
		node  *corev1.Node
		lease *coordinationv1.Lease
		want  Health
	}{
		{"ready, fresh status", node(corev1.ConditionTrue, time.Second), nil, Healthy},
		{"ready, old status, fresh lease", node(corev1.ConditionTrue, 5*time.Minute), lease(3 * time.Second), Healthy},
		{"ready, old status, old lease", node(corev1.ConditionTrue, 5*time.Minute), lease(51 * time.Second), Unreachable},
		{"not ready, fresh lease", node(corev1.ConditionFalse, 5*time.Minute), lease(time.Second), NotReady},
		{"unknown, fresh lease", node(corev1.ConditionUnknown, 5*time.Minute), lease(time.Second), Unreachable},
	}
	for _, c := range cases {
		if got := assess(c.node, c.lease, now, GracePeriod); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReconcileTaints(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	other := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	got, changed := reconcileTaints([]corev1.Taint{other}, wantedTaints(Unreachable, false), now, true)
	if !changed || len(got) != 3 || got[0] != other || got[2].Effect != corev1.TaintEffectNoExecute || got[2].TimeAdded == nil {
		t.Fatalf("unreachable: %+v changed=%v", got, changed)
	}
	again, changed := reconcileTaints(got, wantedTaints(Unreachable, false), now.Add(time.Minute), true)
	if changed || !again[2].TimeAdded.Equal(got[2].TimeAdded) {
		t.Errorf("second pass changed the taints or their time: %+v", again)
	}
	limited, _ := reconcileTaints([]corev1.Taint{other}, wantedTaints(Unreachable, false), now, false)
	if len(limited) != 2 {
		t.Errorf("without NoExecute allowed: %+v", limited)
	}
	healed, changed := reconcileTaints(got, wantedTaints(Healthy, false), now, true)
	if !changed || len(healed) != 1 || healed[0] != other {
		t.Errorf("healthy again: %+v", healed)
	}
	// An autonomous node is tainted unreachable, but not to evict: a
	// NoExecute taint it had is taken away.
	auto, changed := reconcileTaints(got, wantedTaints(Unreachable, true), now, true)
	if !changed || len(auto) != 2 || auto[1].Key != corev1.TaintNodeUnreachable || auto[1].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("autonomous and unreachable: %+v", auto)
	}
}

func TestEvictionTime(t *testing.T) {
	added := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	taints := []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
	tol := func(seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	pod := func(tols ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tols}}
	}
	if at, ok := evictionTime(pod(), taints); !ok || !at.IsZero() {
		t.Errorf("no toleration: %v %v, want now", at, ok)
	}
	if at, ok := evictionTime(pod(tol(ptr.To[int64](300))), taints); !ok || !at.Equal(added.Add(300*time.Second)) {
		t.Errorf("300 s: %v %v", at, ok)
	}
	if _, ok := evictionTime(pod(tol(nil)), taints); ok {
		t.Error("a toleration without seconds keeps the pod forever")
	}
	if at, _ := evictionTime(pod(tol(nil), tol(ptr.To[int64](60))), taints); !at.Equal(added.Add(60 * time.Second)) {
		t.Errorf("the smallest limit counts: %v", at)
	}
}

func TestConditionTaints(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	node := func(status map[corev1.NodeConditionType]corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
		n := &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}}
		for _, typ := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
			if s, ok := status[typ]; ok {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: typ, Status: s})
			}
		}
		return n
	}
	noSchedule := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule} }
	other := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}

	pressed := node(map[corev1.NodeConditionType]corev1.ConditionStatus{
		corev1.NodeMemoryPressure: corev1.ConditionTrue, corev1.NodeDiskPressure: corev1.ConditionFalse,
		corev1.NodePIDPressure: corev1.ConditionTrue, corev1.NodeReady: corev1.ConditionTrue}, other)
	want := []corev1.Taint{noSchedule(corev1.TaintNodeMemoryPressure), noSchedule(corev1.TaintNodePIDPressure)}
	if got := conditionTaints(pressed); !reflect.DeepEqual(got, want) {
		t.Fatalf("conditionTaints = %v, want %v", got, want)
	}
	taints, changed := reconcileTaints(pressed.Spec.Taints, conditionTaints(pressed), now, false)
	if !changed || !reflect.DeepEqual(taints, append([]corev1.Taint{other}, want...)) {
		t.Errorf("pressure taints added: %v (changed %v)", taints, changed)
	}
	if _, changed := reconcileTaints(taints, conditionTaints(pressed), now, false); changed {
		t.Error("the same taints again changed something")
	}

	// Memory recovered; Unknown (a silent node) is not True either.
	calm := node(map[corev1.NodeConditionType]corev1.ConditionStatus{
		corev1.NodeMemoryPressure: corev1.ConditionFalse, corev1.NodePIDPressure: corev1.ConditionUnknown}, taints...)
	taints, changed = reconcileTaints(calm.Spec.Taints, conditionTaints(calm), now, false)
	if !changed || !reflect.DeepEqual(taints, []corev1.Taint{other}) {
		t.Errorf("pressure gone: %v (changed %v), want only %v", taints, changed, other)
	}

	// A pressure key with another effect is not the controller's.
	mine := corev1.Taint{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoExecute}
	if taints, changed := reconcileTaints([]corev1.Taint{mine}, nil, now, false); changed || len(taints) != 1 {
		t.Errorf("a disk-pressure NoExecute taint set by someone else: %v (changed %v), want it kept", taints, changed)
	}
}
