package garbagecollector

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

// env is a running apiserver with the garbage collector started on it.
type env struct {
	client   kubernetes.Interface
	metadata metadata.Interface
	gc       *Controller
}

// startGC runs an apiserver and the garbage collector until the test ends,
// and waits until the collector has synced.
func startGC(t *testing.T) *env {
	t.Helper()
	cctx := controllertest.New(t).Context
	gc := New(cctx)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gc.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	select {
	case <-gc.Synced():
	case err := <-done:
		t.Fatalf("garbage collector stopped before it synced: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("garbage collector did not sync within a minute")
	}
	return &env{client: cctx.Client, metadata: cctx.Metadata, gc: gc}
}

// gone is a condition: get returns NotFound.
func gone(get func() error) func() (bool, error) {
	return func() (bool, error) {
		err := get()
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

// ownerRef builds an ownerReference to obj.
func ownerRef(apiVersion, kind string, obj metav1.Object, block bool) metav1.OwnerReference {
	ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID()}
	if block {
		ref.BlockOwnerDeletion = &block
	}
	return ref
}

func createNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func createConfigMap(t *testing.T, client kubernetes.Interface, ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// waitInGraph waits until the collector's graph holds uid.
func (e *env) waitInGraph(t *testing.T, uid types.UID) {
	t.Helper()
	envtest.Eventually(t, "object "+string(uid)+" in the graph", func() (bool, error) { return e.gc.GraphHasUID(uid), nil })
}

func ptr[T any](v T) *T { return &v }
