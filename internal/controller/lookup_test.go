package controller

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestLookup(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	if err := indexer.Add(pod); err != nil {
		t.Fatal(err)
	}
	pods := corelisters.NewPodLister(indexer).Pods
	for _, tc := range []struct {
		key  string
		want *corev1.Pod
	}{
		{"ns/p", pod},
		{"ns/gone", nil},
		{"a/b/c", nil}, // not a key we produce
	} {
		if got, err := Lookup(tc.key, pods); got != tc.want || err != nil {
			t.Errorf("Lookup(%q) = %v, %v; want %v, nil", tc.key, got, err, tc.want)
		}
	}
	boom := errors.New("boom")
	failing := func(string) NamespaceGetter[*corev1.Pod] {
		return getterFunc(func(string) (*corev1.Pod, error) { return nil, boom })
	}
	if _, err := Lookup("ns/p", failing); !errors.Is(err, boom) {
		t.Errorf("a failing get: error %v, want %v", err, boom)
	}
}

type getterFunc func(name string) (*corev1.Pod, error)

func (f getterFunc) Get(name string) (*corev1.Pod, error) { return f(name) }
