package disruption

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ownedPod(name string, owner types.UID) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if owner != "" {
		yes := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(owner), UID: owner, Controller: &yes}}
	}
	return pod
}

func TestExpectedCounts(t *testing.T) {
	// rs-a and rs-b belong to one Deployment of 5 replicas; rs-c stands alone with 3.
	scales := map[types.UID]*scale{"rs-a": {uid: "deploy", replicas: 5}, "rs-b": {uid: "deploy", replicas: 5}, "rs-c": {uid: "rs-c", replicas: 3}}
	find := func(ref *metav1.OwnerReference, _ string) (*scale, error) {
		if ref.UID == "broken" {
			return nil, errors.New("lookup failed")
		}
		return scales[ref.UID], nil
	}
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	managed := []*corev1.Pod{ownedPod("a1", "rs-a"), ownedPod("a2", "rs-a"), ownedPod("b1", "rs-b"), ownedPod("c1", "rs-c")}
	tests := []struct {
		name              string
		spec              policyv1.PodDisruptionBudgetSpec
		pods              []*corev1.Pod
		expected, desired int32
		unmanaged         int
		wantErr           string
	}{
		{name: "integer minAvailable counts pods", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: num(2)},
			pods: append(managed, ownedPod("lone", "")), expected: 5, desired: 2},
		{name: "maxUnavailable uses controller scale", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: num(1)},
			pods: managed, expected: 8, desired: 7},
		{name: "maxUnavailable percent rounds up", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: pct("10%")},
			pods: managed, expected: 8, desired: 7},
		{name: "maxUnavailable never below zero", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: num(20)},
			pods: managed, expected: 8, desired: 0},
		{name: "minAvailable percent rounds up", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: pct("50%")},
			pods: []*corev1.Pod{ownedPod("c1", "rs-c")}, expected: 3, desired: 2},
		{name: "unmanaged pods are reported and not counted", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: pct("100%")},
			pods: []*corev1.Pod{ownedPod("c1", "rs-c"), ownedPod("lone", "")}, expected: 3, desired: 3, unmanaged: 1},
		{name: "missing controller is an error", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: num(1)},
			pods: []*corev1.Pod{ownedPod("x", "gone")}, wantErr: `found no controllers for pod "x"`},
		{name: "lookup errors propagate", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: num(1)},
			pods: []*corev1.Pod{ownedPod("x", "broken")}, wantErr: "lookup failed"},
		{name: "neither field set expects nothing", pods: managed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expectedCounts(tc.spec, tc.pods, find)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.expected != tc.expected || got.desired != tc.desired || len(got.unmanaged) != tc.unmanaged {
				t.Fatalf("got expected=%d desired=%d unmanaged=%v, want %d %d %d", got.expected, got.desired, got.unmanaged, tc.expected, tc.desired, tc.unmanaged)
			}
		})
	}
}

func TestDisruptionsAllowed(t *testing.T) {
	for _, tc := range []struct {
		c       counts
		healthy int32
		want    int32
	}{
		{counts{expected: 3, desired: 2}, 3, 1},
		{counts{expected: 3, desired: 2}, 1, 0},
		{counts{expected: 0, desired: 0}, 2, 0},
		{counts{expected: 5, desired: 0}, 5, 5},
	} {
		if got := disruptionsAllowed(tc.c, tc.healthy); got != tc.want {
			t.Errorf("disruptionsAllowed(%+v, %d) = %d, want %d", tc.c, tc.healthy, got, tc.want)
		}
	}
}
