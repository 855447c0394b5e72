package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch/internal/envtest"
)

// newClient starts a real apiserver on real etcd and returns a clientset
// with namespace ns created.
func newClient(t *testing.T, ns string) (*envtest.Server, kubernetes.Interface) {
	t.Helper()
	return newClientWith(t, ns, envtest.Options{})
}

// newClientWith is newClient with options (RBAC for tests that act as
// other users).
func newClientWith(t *testing.T, ns string, opts envtest.Options) (*envtest.Server, kubernetes.Interface) {
	t.Helper()
	srv := envtest.StartWith(t, opts)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	if ns != "" {
		_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	return srv, client
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
