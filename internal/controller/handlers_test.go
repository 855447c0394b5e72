package controller

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestObjectFrom(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if got, ok := ObjectFrom[*corev1.Pod](pod); !ok || got != pod {
		t.Fatalf("a pod: got %v, %v", got, ok)
	}
	if got, ok := ObjectFrom[*corev1.Pod](cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}); !ok || got != pod {
		t.Fatalf("a tombstone: got %v, %v", got, ok)
	}
	if _, ok := ObjectFrom[*corev1.Pod](&corev1.Node{}); ok {
		t.Fatal("a node is not a pod")
	}
}

func TestEnqueueHandlers(t *testing.T) {
	var keys []string
	h := EnqueueHandlers(func(key string) { keys = append(keys, key) })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	h.OnAdd(pod, false)
	h.OnUpdate(&corev1.Pod{}, pod)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: pod})
	want := []string{"ns/p", "ns/p", "ns/gone"}
	if len(keys) != len(want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("keys %v, want %v", keys, want)
		}
	}
}

func TestResolveControllerRef(t *testing.T) {
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1"}}
	get := func(name string) (*corev1.Pod, error) {
		if name != owner.Name {
			return nil, errors.New("not found")
		}
		return owner, nil
	}
	tests := []struct {
		name string
		ref  metav1.OwnerReference
		want *corev1.Pod
	}{
		{"same kind, name and UID", metav1.OwnerReference{Kind: "Pod", Name: "o", UID: "u1"}, owner},
		{"another kind", metav1.OwnerReference{Kind: "Job", Name: "o", UID: "u1"}, nil},
		{"a new object of the same name", metav1.OwnerReference{Kind: "Pod", Name: "o", UID: "u2"}, nil},
		{"not found", metav1.OwnerReference{Kind: "Pod", Name: "x", UID: "u1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResolveControllerRef(&tt.ref, "Pod", get); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
