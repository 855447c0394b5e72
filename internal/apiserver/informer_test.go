package apiserver_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"orch/internal/envtest"
)

// recorder keeps what an informer's handlers saw, as "verb name/value".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e == s {
			return true
		}
	}
	return false
}

func (r *recorder) handlers(describe func(obj any) string) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.add("add " + describe(obj)) },
		UpdateFunc: func(_, obj any) { r.add("update " + describe(obj)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			r.add("delete " + describe(obj))
		},
	}
}

func TestInformersSeeEveryChange(t *testing.T) {
	ctx := testContext(t)
	_, client := newClient(t, "inf")
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("inf"))
	var cms, pods recorder
	factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cms.handlers(func(obj any) string {
		cm := obj.(*corev1.ConfigMap)
		return cm.Name + "/" + cm.Data["v"]
	}))
	factory.Core().V1().Pods().Informer().AddEventHandler(pods.handlers(func(obj any) string {
		p := obj.(*corev1.Pod)
		return p.Name + "/" + p.Spec.Containers[0].Image
	}))
	// One object exists before the informers start: it arrives in the initial list.
	if _, err := client.CoreV1().ConfigMaps("inf").Create(ctx, configMap("before", "0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory.StartWithContext(ctx)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	envtest.EventuallyTrue(t, "the initial configmap", func() bool { return cms.has("add before/0") })

	cmClient := client.CoreV1().ConfigMaps("inf")
	for i := 1; i <= 3; i++ {
		cm, err := cmClient.Create(ctx, configMap(fmt.Sprintf("cm%d", i), "1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "2"
		if _, err := cmClient.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmClient.Delete(ctx, "cm2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}
	created, err := client.CoreV1().Pods("inf").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Spec.Containers[0].Image = "busybox:2"
	if _, err := client.CoreV1().Pods("inf").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("inf").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"add cm1/1", "update cm1/2", "add cm3/1", "update cm3/2", "delete cm2/2"} {
		envtest.EventuallyTrue(t, "configmap event "+want, func() bool { return cms.has(want) })
	}
	for _, want := range []string{"add p/busybox:1", "update p/busybox:2", "delete p/busybox:2"} {
		envtest.EventuallyTrue(t, "pod event "+want, func() bool { return pods.has(want) })
	}
}

func configMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": value}}
}
