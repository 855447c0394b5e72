package garbagecollector

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"orch/internal/envtest"
)

// TestMonitorsShareTheControllersInformers: a resource the controllers'
// typed factory serves is watched once, through its informer; another
// (a custom resource) through a metadata informer of the collector's.
func TestMonitorsShareTheControllersInformers(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	gb := &graphBuilder{shared: factory, metadata: metadatafake.NewSimpleMetadataClient(runtime.NewScheme())}
	pods, err := gb.newMonitor(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	if !pods.shared {
		t.Error("pods: not watched through the controllers' informer")
	}
	widgets := schema.GroupVersion{Group: "example.com", Version: "v1"}
	own, err := gb.newMonitor(widgets.WithResource("widgets"), widgets.WithKind("Widget"))
	if err != nil {
		t.Fatal(err)
	}
	if own.shared {
		t.Error("widgets: watched through the typed factory, which does not serve them")
	}
	// The factory runs that informer, and the monitor's handler syncs with it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.StartWithContext(ctx)
	if synced := factory.WaitForCacheSync(ctx.Done()); !synced[reflect.TypeOf(&corev1.Pod{})] {
		t.Fatalf("the factory runs no synced pods informer: %v", synced)
	}
	envtest.Eventually(t, "the monitor's handler synced", func() (bool, error) { return pods.registration.HasSynced(), nil })
	// Stopping the shared monitor leaves the informer to the controllers:
	// it still runs and sees a pod made afterwards.
	pods.stop()
	if pods.informer.IsStopped() {
		t.Error("the shared pods informer was stopped with the monitor")
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "the controllers' pods informer sees a pod made after the monitor stopped", func() (bool, error) {
		_, err := factory.Core().V1().Pods().Lister().Pods("default").Get("after")
		return err == nil, nil
	})
}
