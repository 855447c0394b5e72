package serviceaccount

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"orch/internal/apiserver/apitest"
	"orch/internal/controller"
	"orch/internal/controller/controllertest"
)

// start runs the controller on a fresh apiserver until the test ends,
// after setup has prepared the apiserver.
func start(t *testing.T, setup func(kubernetes.Interface)) (kubernetes.Interface, *Controller) {
	t.Helper()
	srv := apitest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	setup(client)
	broadcaster := record.NewBroadcaster()
	t.Cleanup(broadcaster.Shutdown)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("ORCH_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(controller.Context{
		Client:    client,
		Metadata:  metadata.NewForConfigOrDie(srv.Config),
		Informers: factory,
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Log:   log,
		Clock: clock.RealClock{},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
		factory.Shutdown()
	})
	return client, c
}

// TestDefaultServiceAccount: a default ServiceAccount appears in new and
// existing namespaces, comes back when deleted, and is not created in a
// namespace being deleted.
func TestDefaultServiceAccount(t *testing.T) {
	ctx := context.Background()
	client, _ := start(t, func(client kubernetes.Interface) {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "existing"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	exists := func(ns string) func() (bool, error) {
		return func() (bool, error) {
			sa, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && sa.DeletionTimestamp == nil, err
		}
	}

	controllertest.Eventually(t, "default service account in a namespace older than the controller", exists("existing"))

	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "default service account in a new namespace", exists("team"))
	first, err := client.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := client.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "default service account recreated", func() (bool, error) {
		sa, err := client.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && sa.UID != first.UID, err
	})

	// A terminating namespace (held by its finalizer, as no namespace
	// controller runs here) gets no new default service account.
	if err := client.CoreV1().Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another namespace proves the controller went past the deleted one.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "default service account in a namespace created later", exists("later"))
	if ok, err := exists("team")(); ok || err != nil {
		t.Errorf("default service account in a terminating namespace: %v, %v", ok, err)
	}
}
