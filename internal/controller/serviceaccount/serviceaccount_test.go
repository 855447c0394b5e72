package serviceaccount

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/controller/controllertest"
	"orch/internal/envtest"
)

// start runs the controller on a fresh apiserver until the test ends,
// after setup has prepared the apiserver.
func start(t *testing.T, setup func(kubernetes.Interface)) (kubernetes.Interface, *Controller) {
	t.Helper()
	env := controllertest.New(t)
	setup(env.Client)
	c := New(env.Context)
	env.Start(t, c)
	return env.Client, c
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

	envtest.Eventually(t, "default service account in a namespace older than the controller", exists("existing"))

	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "default service account in a new namespace", exists("team"))
	first, err := client.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := client.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, "default service account recreated", func() (bool, error) {
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
	envtest.Eventually(t, "default service account in a namespace created later", exists("later"))
	if ok, err := exists("team")(); ok || err != nil {
		t.Errorf("default service account in a terminating namespace: %v, %v", ok, err)
	}
}
